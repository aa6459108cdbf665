import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { prepareDatabase } from '../src/database/prepare-database';
import type { ConditionGroup } from '../src/conditions/condition.types';
import { preparedRows } from '../src/database/query-rows';
import { runAsApiRequest, statementTimeoutDriver } from '../src/database/statement-timeout';
import { SegmentMembershipService } from '../src/segments/segment-membership.service';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { verifyDomainForTest } from './support/domains';
import { holdContactLocks, lockWaiters } from './support/locks';
import { pgbouncerBinary, TestPgBouncer } from './support/pgbouncer';
import { pollUntil } from './support/poll';
import { startTestSmtpServer, TestSmtpServer } from './support/smtp-server';
import {
  flushPrefix,
  PG_ADMIN_URL,
  startTestApp,
  testConfig,
  TestApp,
  TestProject,
  uniqueName,
} from './support/test-app';

const API_MS = 1000;
const BACKGROUND_MS = 240_000;
const binary = pgbouncerBinary();

const PRO: ConditionGroup = {
  logic: 'AND',
  conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
};

/**
 * The app behind PgBouncer in transaction pooling mode (Debian's 1.18: no prepared statements in
 * that mode, no `options` startup parameter): DATABASE_URL through PgBouncer with
 * DATABASE_PREPARED_STATEMENTS=false, migrations and LISTEN on DATABASE_DIRECT_URL.
 */
(binary ? describe : describe.skip)('behind PgBouncer in transaction mode (e2e)', () => {
  let bouncer: TestPgBouncer;
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  let app: TestApp;
  let ds: DataSource;
  let project: TestProject;
  const database = uniqueName('mw_test');
  const prefix = uniqueName('mwpgb');
  const direct = new URL(PG_ADMIN_URL);
  direct.pathname = `/${database}`;

  beforeAll(async () => {
    bouncer = new TestPgBouncer(binary as string);
    await bouncer.start();
    dns = await startTestDnsServer();
    smtp = await startTestSmtpServer();
    const config = testConfig(bouncer.url(database), prefix, {
      DATABASE_DIRECT_URL: direct.toString(),
      DATABASE_PREPARED_STATEMENTS: 'false',
      DATABASE_POOL_SIZE: '6',
      DNS_SERVERS: dns.address,
      SMTP_URL: smtp.url,
      PUBLIC_URL: 'https://mail.example.test',
      EMAIL_RATE_PER_SECOND: '1000',
      API_STATEMENT_TIMEOUT_MS: String(API_MS),
      BACKGROUND_STATEMENT_TIMEOUT_MS: String(BACKGROUND_MS),
      RECOVERY_EVERY_MS: '30000',
    });
    // What `mailwright migrate` and boot do: the migrations' advisory lock needs a session.
    expect(await prepareDatabase(config.databaseDirectUrl)).not.toHaveLength(0);
    app = await startTestApp(config);
    ds = app.app.get(DataSource);
    project = await app.createProject('Pooled');
    await verifyDomainForTest(app, project, 'acme.test', dns);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await smtp?.close();
    await dns?.stop();
    await bouncer?.close();
    await flushPrefix(prefix);
    const admin = new Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
  });

  const request = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) =>
    app.request({ method, url, key: project.secretKey, body });

  it('sends (the SMTP sink gets the mail) and tracks through PgBouncer', async () => {
    const sent = await request('POST', '/v1/send', {
      to: 'ada@example.org',
      from: 'hello@acme.test',
      subject: 'Pooled',
      body: 'Hello {{ email }}',
    });
    expect(sent.status).toBe(200);
    await smtp.waitForMessages(1);
    expect(smtp.messagesTo('ada@example.org')).toHaveLength(1);

    const tracked = await request('POST', '/v1/track', {
      email: 'ada@example.org',
      event: 'signed-up',
      data: { plan: 'free' },
    });
    expect(tracked.status).toBe(200);
    const events = await request('GET', '/events?name=signed-up');
    expect(events.body.data.items).toHaveLength(1);
  });

  it('keeps live segment membership by LISTEN on the direct URL', async () => {
    const segment = await request('POST', '/segments', { name: 'Pro', condition: PRO });
    expect(segment.status).toBe(201);
    const segmentId: string = segment.body.data.id;
    await ds.transaction((manager) =>
      app.app.get(SegmentMembershipService).keep(manager, project.id, [segmentId]),
    );
    // The listener's session is on Postgres itself, not on a PgBouncer client connection.
    const [{ n: listeners }] = await ds.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND application_name = 'mailwright-segments-listen'`,
      [database],
    );
    expect(listeners).toBe(1);

    const tracked = await request('POST', '/v1/track', {
      email: 'pro@example.org',
      event: 'upgraded',
      data: { plan: 'pro' },
    });
    expect(tracked.status).toBe(200);
    const entered = await pollUntil(
      () => request('GET', `/events?name=segment.${segmentId}.entered`),
      (res) => res.body.data.items.length > 0,
      5_000,
    );
    expect(entered.body.data.items[0].contactId).toBe(tracked.body.data.contact);
    const shown = await request('GET', `/segments/${segmentId}`);
    expect(shown.body.data.memberCount).toBe(1);
  });

  it('answers 503 TIMEOUT past API_STATEMENT_TIMEOUT_MS, and the bound never leaks to other clients', async () => {
    const created = await request('POST', '/contacts', { email: 'max@example.org' });
    expect(created.status).toBe(201);
    const locks = await holdContactLocks(ds, project.id, ['max@example.org']);
    try {
      const patching = request('PATCH', `/contacts/${created.body.data.id}`, {
        data: { plan: 'pro' },
      });
      await lockWaiters(ds, 1);
      const res = await patching;
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('TIMEOUT');
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
    } finally {
      await locks.rollback();
    }
    // Background work (outside a request) keeps its own bound, one transaction at a time.
    const [{ setting }] = await ds.query(
      `SELECT setting FROM pg_settings WHERE name = 'statement_timeout'`,
    );
    expect(Number(setting)).toBe(BACKGROUND_MS);
    // Another client of the same PgBouncer sees the server's default on every connection.
    const other = new Client({ connectionString: bouncer.url(database) });
    await other.connect();
    try {
      for (let i = 0; i < 10; i++) {
        const { rows } = await other.query('SHOW statement_timeout');
        expect(rows[0].statement_timeout).toBe('0');
      }
    } finally {
      await other.end();
    }
  });

  it('bounds a statement outside a transaction and one inside a REPEATABLE READ transaction', async () => {
    const bound = (m: { query: DataSource['query'] }) =>
      m
        .query(
          `SELECT current_setting('statement_timeout') AS s, current_setting('transaction_isolation') AS i`,
        )
        .then((rows: Array<{ s: string; i: string }>) => rows[0]);
    // An API request's statement on its own: its own transaction with the API bound.
    await expect(runAsApiRequest(() => bound(ds))).resolves.toEqual({
      s: '1s',
      i: 'read committed',
    });
    await expect(runAsApiRequest(() => ds.query('SELECT pg_sleep(3)'))).rejects.toThrow(
      /statement timeout/,
    );
    // A transaction: SET LOCAL with START TRANSACTION, the isolation level still applies.
    await expect(
      runAsApiRequest(() => ds.transaction('REPEATABLE READ', (m) => bound(m))),
    ).resolves.toEqual({ s: '1s', i: 'repeatable read' });
    await expect(ds.transaction((m) => bound(m))).resolves.toEqual({
      s: '4min',
      i: 'read committed',
    });
  });

  it('with DATABASE_PREPARED_STATEMENTS=false never leaves a named statement on a pooled server connection', async () => {
    // pg prepares a query that has a name once per client and then only binds it, which fails on
    // another server connection of PgBouncer; the driver drops the name instead.
    const named = async (preparedStatements: boolean) => {
      const driver = statementTimeoutDriver({ apiMs: API_MS, backgroundMs: BACKGROUND_MS }, 0, {
        transactionPooled: true,
        preparedStatements,
      });
      const pool = new driver.Pool({ connectionString: bouncer.url(database), max: 4 });
      try {
        await Promise.all(
          Array.from({ length: 4 }, async (_, k) => {
            for (let i = 0; i < 25; i++) {
              const client = await pool.connect();
              try {
                const { rows } = await client.query({
                  name: 'mw_named',
                  text: 'SELECT $1::int AS n',
                  values: [k * 100 + i],
                });
                expect(rows[0].n).toBe(k * 100 + i);
              } finally {
                client.release();
              }
            }
          }),
        );
      } finally {
        await pool.end();
      }
    };
    await expect(named(false)).resolves.toBeUndefined();
    // The control: with names kept, a client's statement meets a server connection that lacks it
    // (or already has it). Which connection a client gets is PgBouncer's timing, so a run may
    // happen to keep each client on its own: a few runs, one must fail.
    const control = async (): Promise<unknown> => {
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          await named(true);
        } catch (error) {
          return error;
        }
      }
      return null;
    };
    expect(String(await control())).toMatch(/prepared statement/);

    // The service's own named statements (preparedRows): through pg-pool's pool.query outside a
    // transaction, through the transaction's client inside one; both get the request's bound.
    await Promise.all(
      Array.from({ length: 4 }, async (_, k) => {
        for (let i = 0; i < 25; i++) {
          const [row] = await preparedRows<{ n: number }>(ds.manager, 'SELECT $1::int AS n', [
            k * 100 + i,
          ]);
          expect(row.n).toBe(k * 100 + i);
        }
      }),
    );
    const setting = `SELECT current_setting('statement_timeout') AS s`;
    await expect(runAsApiRequest(() => preparedRows(ds.manager, setting))).resolves.toEqual([
      { s: '1s' },
    ]);
    await expect(
      runAsApiRequest(() => ds.transaction((m) => preparedRows(m, setting))),
    ).resolves.toEqual([{ s: '1s' }]);
  });

  it('resumes answering after PgBouncer restarts mid-load, and every answered track is stored', async () => {
    let stop = false;
    let answered = 0;
    let failed = 0;
    let n = 0;
    const worker = async () => {
      while (!stop) {
        const res = await request('POST', '/v1/track', {
          email: `load${n++ % 50}@example.org`,
          event: 'load',
        });
        if (res.status === 200) answered++;
        else failed++;
      }
    };
    const load = [worker(), worker(), worker(), worker()];
    await pollUntil(
      async () => answered,
      (count) => count >= 20,
      10_000,
      20,
    );
    await bouncer.restart();
    const resumedFrom = answered;
    const resumed = await pollUntil(
      async () => answered,
      (count) => count >= resumedFrom + 40,
      15_000,
      20,
    );
    stop = true;
    await Promise.all(load);
    expect(resumed).toBeGreaterThanOrEqual(resumedFrom + 40);
    console.log(`PgBouncer restart: ${answered} tracks answered, ${failed} refused meanwhile`);
    // After the restart every request goes through again.
    for (let i = 0; i < 10; i++) {
      const res = await request('POST', '/v1/track', { email: 'after@example.org', event: 'load' });
      expect(res.status).toBe(200);
      answered++;
    }
    const [{ n: stored }] = await ds.query(
      `SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'load'`,
      [project.id],
    );
    // A request cut at its COMMIT may have committed without an answer; none answered is lost.
    expect(stored).toBeGreaterThanOrEqual(answered);
    expect(stored).toBeLessThanOrEqual(answered + failed);
  });
});

if (!binary) {
  console.warn('pgbouncer.e2e-spec: no pgbouncer binary (apt-get install -y pgbouncer); skipped');
}
