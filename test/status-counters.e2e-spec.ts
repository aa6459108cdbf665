import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';
import { PG_ADMIN_URL, startTestApp, testConfig } from './support/test-app';

/**
 * Status counters (real Postgres, Redis, SMTP and HTTP receivers): the
 * gauges of GET /metrics and a workflow's stats equal count(*) of the tables
 * through sends, deliveries, bounces, webhook deliveries that succeed and
 * fail, workflow starts, waits, completions, exits, failures, cancels, edits
 * that remove a step, deletes and a contact erased; and a scrape, a workflow
 * list page and a workflow's GET read no row of emails, webhook_deliveries
 * or workflow_executions (pg_stat_user_tables before and after, in a
 * process that does nothing else).
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const METRICS_TOKEN = 'metrics-token-0123456789';
const COUNTED = ['emails', 'webhook_deliveries', 'workflow_executions'] as const;

/** The samples of the status gauges, `family{status,source}` → value, zeros left out (a count(*) has no zero rows). */
function statusGauges(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  const re =
    /^mailwright_(emails|webhook_deliveries|campaigns|workflow_executions)\{([^}]*)\} (\S+)$/gm;
  for (const m of text.matchAll(re)) {
    const labels = Object.fromEntries(
      [...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Number(m[3]) !== 0) out[`${m[1]}{${labels.status},${labels.source ?? ''}}`] = Number(m[3]);
  }
  return out;
}

async function tableCounts(db: DataSource): Promise<Record<string, number>> {
  const rows: { k: string; n: number }[] = await db.query(`
    SELECT 'emails{' || status || ',' || source || '}' AS k, count(*)::int AS n FROM emails GROUP BY status, source
    UNION ALL SELECT 'webhook_deliveries{' || status || ',}', count(*)::int FROM webhook_deliveries GROUP BY status
    UNION ALL SELECT 'campaigns{' || status || ',}', count(*)::int FROM campaigns GROUP BY status
    UNION ALL SELECT 'workflow_executions{' || status || ',}', count(*)::int FROM workflow_executions GROUP BY status`);
  return Object.fromEntries(rows.map((r) => [r.k, r.n]));
}

/**
 * Every workflow's counters beside a count of its executions, in one
 * statement (one snapshot: executions move on while the test reads).
 */
async function workflowCounts(db: DataSource): Promise<{ counters: Json[]; counted: Json[] }> {
  const [row] = await db.query(`
    WITH counters AS (
      SELECT workflow_id::text AS id, sum(running)::int AS running, sum(waiting)::int AS waiting, sum(completed)::int AS completed,
             sum(exited)::int AS exited, sum(failed)::int AS failed, sum(cancelled)::int AS cancelled
        FROM workflow_counters GROUP BY 1
      HAVING sum(running) <> 0 OR sum(waiting) <> 0 OR sum(completed) <> 0 OR sum(exited) <> 0 OR sum(failed) <> 0 OR sum(cancelled) <> 0),
    counted AS (
      SELECT workflow_id::text AS id, count(*) FILTER (WHERE status = 'RUNNING')::int AS running, count(*) FILTER (WHERE status = 'WAITING')::int AS waiting,
             count(*) FILTER (WHERE status = 'COMPLETED')::int AS completed, count(*) FILTER (WHERE status = 'EXITED')::int AS exited,
             count(*) FILTER (WHERE status = 'FAILED')::int AS failed, count(*) FILTER (WHERE status = 'CANCELLED')::int AS cancelled
        FROM workflow_executions GROUP BY 1)
    SELECT (SELECT coalesce(json_agg(c ORDER BY c.id), '[]') FROM counters c) AS counters,
           (SELECT coalesce(json_agg(c ORDER BY c.id), '[]') FROM counted c) AS counted`);
  return row;
}

describe('status counters (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let ok: HttpReceiver;
  let down: HttpReceiver;
  let appClosed = false;
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const scrape = async () =>
    (
      await t.app.request({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      })
    ).raw;
  const create = async (steps: Json[]) => {
    const res = await req('POST', '/workflows', {
      name: 'W',
      enabled: true,
      trigger: { type: 'MANUAL' },
      steps,
    });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const start = async (workflowId: string, email: string) => {
    const res = await req('POST', `/workflows/${workflowId}/executions`, { email });
    expect(res.status).toBe(202);
    return res.body.data as Json;
  };
  const statuses = async (workflowId: string): Promise<string[]> =>
    (
      await db.query(`SELECT status FROM workflow_executions WHERE workflow_id = $1 ORDER BY id`, [
        workflowId,
      ])
    ).map((r: Json) => r.status as string);
  /**
   * The counters of every workflow equal a count(*) of its executions; once
   * they have settled (`workflowIds`), GET /workflows/{id} answers them too.
   */
  const expectStatsExact = async (workflowIds: string[] = []) => {
    const { counters, counted } = await workflowCounts(db);
    expect(counters).toEqual(counted);
    for (const id of workflowIds) {
      const got = await req('GET', `/workflows/${id}`);
      const row = counted.find((c) => c.id === id) ?? {
        running: 0,
        waiting: 0,
        completed: 0,
        exited: 0,
        failed: 0,
        cancelled: 0,
      };
      const { id: _id, ...expected } = row;
      if (got.status === 200)
        expect({ id, stats: got.body.data.stats }).toEqual({ id, stats: expected });
    }
  };

  beforeAll(async () => {
    ok = await startHttpReceiver();
    down = await startHttpReceiver();
    down.fallback = { status: 503, body: 'down' };
    t = await startSendingTest('Counters', {
      METRICS_TOKEN,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '100,100',
      WORKFLOW_RETRY_DELAYS_MS: '100,100',
      RECOVERY_EVERY_MS: '1000',
    });
    db = t.app.app.get(DataSource);
  }, 60_000);

  afterAll(async () => {
    if (appClosed) {
      // The last spec closed the app already; what close() would do besides.
      await t?.smtp.close();
      await t?.dns.stop();
      await new Client({ connectionString: PG_ADMIN_URL }).connect().then(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS "${t.db.name}" WITH (FORCE)`);
        await c.end();
      });
    } else {
      await t?.close();
    }
    await ok?.close();
    await down?.close();
  });

  it('workflow stats equal a count of the executions through starts, waits, completion, exits, failures, cancel, edit and delete', async () => {
    const waits = await create([{ id: 'd', type: 'DELAY', amount: 1, unit: 'hours' }]);
    const completes = await create([{ id: 'u', type: 'UPDATE_CONTACT', data: { seen: true } }]);
    const exits = await create([{ id: 'x', type: 'EXIT' }]);
    const fails = await create([
      { id: 'h', type: 'WEBHOOK', url: `${down.url}/hook`, method: 'POST', body: '{}' },
    ]);
    const deleted = await create([{ id: 'd', type: 'DELAY', amount: 1, unit: 'hours' }]);
    const all = [waits, completes, exits, fails, deleted];

    const first = await start(waits, 'w1@example.org');
    for (const email of ['w2@example.org', 'w3@example.org', 'w4@example.org'])
      await start(waits, email);
    for (const email of ['c1@example.org', 'c2@example.org']) await start(completes, email);
    await start(exits, 'x1@example.org');
    await start(fails, 'f1@example.org');
    for (const email of ['d1@example.org', 'd2@example.org']) await start(deleted, email);
    await expectStatsExact();

    const settled = await pollUntil(
      async () => ({
        waits: await statuses(waits),
        completes: await statuses(completes),
        exits: await statuses(exits),
        fails: await statuses(fails),
      }),
      (s) =>
        s.waits.every((x) => x === 'WAITING') &&
        s.completes.every((x) => x === 'COMPLETED') &&
        s.exits[0] === 'EXITED' &&
        s.fails[0] === 'FAILED',
      20_000,
    );
    expect(settled).toEqual({
      waits: Array(4).fill('WAITING'),
      completes: ['COMPLETED', 'COMPLETED'],
      exits: ['EXITED'],
      fails: ['FAILED'],
    });
    await expectStatsExact(all);

    expect((await req('POST', `/workflows/${waits}/executions/${first.id}/cancel`)).status).toBe(
      200,
    );
    await expectStatsExact(all);

    // An edit that removes the step three executions wait at exits them (step_removed).
    expect(
      (await req('PATCH', `/workflows/${waits}`, { steps: [{ id: 'other', type: 'EXIT' }] }))
        .status,
    ).toBe(200);
    expect(await statuses(waits)).toEqual(['CANCELLED', 'EXITED', 'EXITED', 'EXITED']);
    await expectStatsExact(all);

    expect((await req('DELETE', `/workflows/${deleted}`)).status).toBe(200);
    expect(await statuses(deleted)).toEqual(['CANCELLED', 'CANCELLED']);
    await expectStatsExact(all);

    const list = (await req('GET', '/workflows?limit=100')).body.data.items as Json[];
    expect(list.find((w) => w.id === waits)?.stats).toEqual({
      running: 0,
      waiting: 0,
      completed: 0,
      exited: 3,
      failed: 0,
      cancelled: 1,
    });
  });

  it('the gauges of /metrics equal counts of the tables after sends, deliveries, bounces, webhook deliveries and an erased contact', async () => {
    expect(
      (await req('POST', '/webhooks', { url: `${ok.url}/ok`, events: ['email.*'] })).status,
    ).toBe(201);
    expect(
      (await req('POST', '/webhooks', { url: `${down.url}/down`, events: ['email.sent'] })).status,
    ).toBe(201);
    t.smtp.fail({
      stage: 'RCPT',
      code: 550,
      recipient: 'gone@example.org',
      message: 'No such user',
    });
    const sent = await t.send({
      to: ['a@example.org', 'b@example.org', 'gone@example.org'],
      from: 'hello@acme.test',
      subject: 'Hi',
      body: '<p>Hello</p>',
    });
    expect(sent.status).toBe(200);
    await t.send({
      to: 'c@example.org',
      from: 'hello@acme.test',
      subject: 'Hi',
      body: '<p>Hello</p>',
    });

    const final = await pollUntil(
      async (): Promise<string[]> =>
        (await db.query(`SELECT status::text AS s FROM emails ORDER BY to_email`)).map(
          (r: Json) => r.s as string,
        ),
      (s) => s.length === 4 && s.every((x) => ['SENT', 'BOUNCED'].includes(x)),
      20_000,
    );
    expect([...final].sort()).toEqual(['BOUNCED', 'SENT', 'SENT', 'SENT']);
    // The failing endpoint has been tried (PENDING for a retry, or FAILED after its last).
    await pollUntil(
      () => Promise.resolve(down.requests.filter((r) => r.path === '/down').length),
      (n) => n >= 3,
      20_000,
    );
    await pollUntil(
      () => Promise.resolve(ok.requests.filter((r) => r.path === '/ok').length),
      (n) => n >= 8,
      20_000,
    );

    const same = async () => {
      const got = await pollUntil(
        async () => ({ metrics: statusGauges(await scrape()), tables: await tableCounts(db) }),
        (v) =>
          JSON.stringify(Object.entries(v.metrics).sort()) ===
          JSON.stringify(Object.entries(v.tables).sort()),
        10_000,
      );
      expect(got.metrics).toEqual(got.tables);
      return got.tables;
    };
    const before = await same();
    expect(before['emails{SENT,TRANSACTIONAL}']).toBe(3);
    expect(before['emails{BOUNCED,TRANSACTIONAL}']).toBe(1);
    expect(before['workflow_executions{EXITED,}']).toBe(4);

    // Erasing a contact deletes its emails and executions by cascade.
    const contact = (
      await db.query(`SELECT contact_id FROM emails WHERE to_email = 'a@example.org'`)
    )[0].contact_id as string;
    expect((await req('DELETE', `/contacts/${contact}`)).status).toBeLessThan(300);
    const after = await same();
    expect(after['emails{SENT,TRANSACTIONAL}']).toBe(2);
  });

  it('a scrape, a workflow list page and a workflow GET read no row of emails, webhook_deliveries or workflow_executions', async () => {
    const workflowId = (
      await db.query(`SELECT id FROM workflows WHERE deleted_at IS NULL LIMIT 1`)
    )[0].id as string;
    const expected = await tableCounts(db);
    const admin = new Client({ connectionString: t.db.url });
    await admin.connect();
    try {
      const others = async () =>
        Number(
          (
            await admin.query(
              `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
              [t.db.name],
            )
          ).rows[0].n,
        );
      /** Rows and scans of the counted tables; a backend's pending numbers are flushed when it exits. */
      const reads = async () => {
        await admin.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await admin.query(
          `SELECT relname, seq_scan + coalesce(idx_scan, 0) AS scans, seq_tup_read + coalesce(idx_tup_fetch, 0) AS tuples
             FROM pg_stat_user_tables WHERE relname = ANY($1) ORDER BY relname`,
          [COUNTED],
        );
        return rows.map((r) => `${r.relname}: ${r.scans} scans, ${r.tuples} rows`);
      };
      // Only the process under test runs: the app of the other specs stops, with its workers and recoveries.
      await t.app.close();
      appClosed = true;
      expect(await pollUntil(others, (n) => n === 0, 10_000)).toBe(0);
      const api = await startTestApp(
        testConfig(t.db.url, t.prefix, { APP_ROLE: 'api', METRICS_TOKEN }),
      );
      const before = await reads();
      let metrics: string;
      try {
        metrics = (
          await api.request({
            method: 'GET',
            url: '/metrics',
            headers: { authorization: `Bearer ${METRICS_TOKEN}` },
          })
        ).raw;
        const list = await api.request({
          method: 'GET',
          url: '/workflows?limit=100',
          key: t.project.secretKey,
        });
        const one = await api.request({
          method: 'GET',
          url: `/workflows/${workflowId}`,
          key: t.project.secretKey,
        });
        expect([list.status, one.status]).toEqual([200, 200]);
        expect(list.body.data.items.length).toBeGreaterThan(0);
      } finally {
        await api.close();
      }
      expect(await pollUntil(others, (n) => n === 0, 10_000)).toBe(0);
      expect(await reads()).toEqual(before);
      expect(statusGauges(metrics)).toEqual(expected);

      // Every backend that wrote counters has gone: compaction folds their slots into slot 0, sums unchanged.
      const sums = `SELECT family, status, source, sum(n)::int AS n FROM status_counters GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`;
      const workflowSums = `SELECT workflow_id, sum(running + waiting + completed + exited + failed + cancelled)::int AS n FROM workflow_counters GROUP BY 1 ORDER BY 1`;
      const [beforeSums, beforeWorkflows] = [
        (await admin.query(sums)).rows,
        (await admin.query(workflowSums)).rows,
      ];
      expect(
        (await admin.query(`SELECT count(*)::int AS n FROM status_counters WHERE slot <> 0`))
          .rows[0].n,
      ).toBeGreaterThan(0);
      await admin.query('SELECT compact_counters()');
      expect(
        (await admin.query(`SELECT count(DISTINCT slot)::int AS n FROM status_counters`)).rows[0].n,
      ).toBe(1);
      expect(
        (await admin.query(`SELECT count(*)::int AS n FROM workflow_counters WHERE slot <> 0`))
          .rows[0].n,
      ).toBe(0);
      expect((await admin.query(sums)).rows).toEqual(beforeSums);
      expect((await admin.query(workflowSums)).rows).toEqual(beforeWorkflows);
    } finally {
      await admin.end();
    }
  });
});
