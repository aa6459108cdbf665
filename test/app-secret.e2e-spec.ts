import { existsSync } from 'node:fs';
import { Client } from 'pg';
import { EmailsService } from '../src/sending/emails.service';
import { WorkflowSecrets } from '../src/workflows/workflow-secrets';
import {
  DIST_CLI,
  DIST_MAIN,
  freePort,
  runCli,
  startService,
  waitForHttp,
} from './support/processes';
import { SendingTest, startSendingTest, verifyDkim, waitForEmailStatus } from './support/sending';
import {
  flushPrefix,
  PG_ADMIN_URL,
  startTestApp,
  testConfig,
  TestApp,
  TEST_REDIS_URL,
} from './support/test-app';

/** The secret the domains were created under, and the one that replaces it. */
const SECRET_A = 'old-secret-old-secret-old-secret-old-0123456789';
const SECRET_B = 'new-secret-new-secret-new-secret-new-0123456789';
const UNRELATED = 'unrelated-secret-unrelated-secret-0123456789';

const oneClick = (app: TestApp, url: string) =>
  app.request({
    method: 'POST',
    url: new URL(url).pathname,
    body: 'List-Unsubscribe=One-Click',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

beforeAll(() => {
  if (!existsSync(DIST_CLI) || !existsSync(DIST_MAIN))
    throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
});

describe('APP_SECRET: a wrong secret refuses to boot; APP_SECRET_PREVIOUS and `secrets rotate` (e2e)', () => {
  let t: SendingTest;
  let app: TestApp | undefined;
  const signedWorkflow = { id: '', secret: '' };
  /** Unsubscribe links signed under SECRET_A, for two subscribed contacts. */
  const oldLinks: {
    keptUrl: string;
    keptContact: string;
    droppedUrl: string;
    droppedContact: string;
  } = {
    keptUrl: '',
    keptContact: '',
    droppedUrl: '',
    droppedContact: '',
  };

  /** Environment of an app in this test's world (its database, queue prefix, DNS and SMTP servers). */
  const appEnv = (secrets: Record<string, string>) => ({
    DNS_SERVERS: t.dns.address,
    SMTP_URL: t.smtp.url,
    PUBLIC_URL: 'https://mail.example.test',
    EMAIL_RATE_PER_SECOND: '1000',
    ...secrets,
  });
  const startApp = async (secrets: Record<string, string>) => {
    app = await startTestApp(testConfig(t.db.url, t.prefix, appEnv(secrets)));
    return app;
  };
  const stopApp = async () => {
    await app?.close();
    app = undefined;
  };
  const processEnv = (env: Record<string, string>) => ({
    DATABASE_URL: t.db.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: t.prefix,
    HOST: '127.0.0.1',
    ...env,
  });

  const sealedKeys = async (): Promise<Map<string, string>> => {
    const client = new Client({ connectionString: t.db.url });
    await client.connect();
    try {
      const res = await client.query<{ domain: string; sealed: Buffer }>(
        'SELECT domain, dkim_private_key_sealed AS sealed FROM domains ORDER BY domain',
      );
      return new Map(res.rows.map((r) => [r.domain, r.sealed.toString('hex')]));
    } finally {
      await client.end();
    }
  };

  /** Runs one statement on the test's database. */
  const sql = async (text: string): Promise<Array<Record<string, unknown>>> => {
    const client = new Client({ connectionString: t.db.url });
    await client.connect();
    try {
      return (await client.query(text)).rows;
    } finally {
      await client.end();
    }
  };

  /** Sends from the verified domain and answers the delivered message's DKIM results. */
  const sendSigned = async (to: string) => {
    const res = await app!.request({
      method: 'POST',
      url: '/v1/send',
      key: t.project.secretKey,
      body: { to, from: 'hello@acme.test', subject: `To ${to}`, body: '<p>x</p>' },
    });
    expect(res.status).toBe(200);
    const record = await waitForEmailStatus(app!, t.project.secretKey, res.body.data.emails[0].id, [
      'SENT',
      'FAILED',
    ]);
    expect(record).toMatchObject({ status: 'SENT', error: null });
    const [message] = t.smtp.messagesTo(to);
    return verifyDkim(message.raw, t.dns);
  };

  /** `node dist/main.js` until it exits (it is expected to refuse), with its output. */
  const refusedBoot = async (env: Record<string, string>) => {
    const proc = startService(
      processEnv({ PORT: String(await freePort()), LOG_LEVEL: 'info', ...env }),
    );
    const killer = setTimeout(() => proc.child.kill('SIGKILL'), 30_000);
    const code = await proc.exited;
    clearTimeout(killer);
    return { code, output: proc.output() };
  };

  beforeAll(async () => {
    t = await startSendingTest('Rotation', { APP_SECRET: SECRET_A });
    app = t.app;
    // A second domain (still PENDING): its key is sealed too, and must be counted and rotated.
    const second = await app.request({
      method: 'POST',
      url: '/domains',
      key: t.project.secretKey,
      body: { domain: 'second.test' },
    });
    expect(second.status).toBe(201);
    // A webhook endpoint: its signing secret is sealed too, and rotated with the DKIM keys.
    const hook = await app.request({
      method: 'POST',
      url: '/webhooks',
      key: t.project.secretKey,
      body: { url: 'https://hooks.example.com/x', events: ['email.*'] },
    });
    expect(hook.status).toBe(201);
    // A workflow: its WEBHOOK signing secret is sealed in the same box and rotated too.
    const workflow = await app.request({
      method: 'POST',
      url: '/workflows',
      key: t.project.secretKey,
      body: {
        name: 'Hook',
        trigger: { type: 'MANUAL' },
        steps: [{ type: 'WEBHOOK', url: 'https://hooks.example.com/w', method: 'POST' }],
      },
    });
    expect(workflow.status).toBe(201);
    signedWorkflow.id = workflow.body.data.id;
    signedWorkflow.secret = workflow.body.data.secret;
    const emails = app.app.get(EmailsService);
    for (const which of ['kept', 'dropped'] as const) {
      const contact = await app.request({
        method: 'POST',
        url: '/contacts',
        key: t.project.secretKey,
        body: { email: `${which}@example.org`, subscribed: true },
      });
      expect(contact.status).toBe(201);
      oldLinks[`${which}Contact`] = contact.body.data.id;
      oldLinks[`${which}Url`] = emails.unsubscribeUrl(t.project.id, contact.body.data.id, null);
    }
    await stopApp();
  }, 60_000);

  afterAll(async () => {
    await stopApp();
    if (!t) return;
    await t.smtp.close();
    await t.dns.stop();
    await flushPrefix(t.prefix);
    const admin = new Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${t.db.name}" WITH (FORCE)`);
    await admin.end();
  });

  it('another APP_SECRET: every role refuses to start, naming APP_SECRET, APP_SECRET_PREVIOUS, the keys and the fix', async () => {
    const before = await sealedKeys();
    const runs = await Promise.all([
      refusedBoot({ APP_ROLE: 'api', APP_SECRET: SECRET_B }),
      refusedBoot({ APP_ROLE: 'worker', APP_SECRET: SECRET_B }),
      refusedBoot({ APP_ROLE: 'all', APP_SECRET: SECRET_B }),
      // A previous secret that is not the one the keys were sealed with does not help.
      refusedBoot({ APP_ROLE: 'all', APP_SECRET: SECRET_B, APP_SECRET_PREVIOUS: UNRELATED }),
    ]);
    for (const { code, output } of runs) {
      expect(code).toBe(1);
      expect(output).toContain(
        'Mailwright failed to start: 2 sealed DKIM keys (domains acme.test, second.test) open with neither APP_SECRET nor any secret in APP_SECRET_PREVIOUS.',
      );
      expect(output).toContain('APP_SECRET_PREVIOUS');
      expect(output).toContain('`node dist/cli.js secrets rotate`');
      for (const secret of [SECRET_A, SECRET_B, UNRELATED]) expect(output).not.toContain(secret);
      expect(output).not.toContain('PRIVATE KEY');
    }
    expect(await sealedKeys()).toEqual(before);

    // In process too (createApp, as the tests and main.ts boot): refused, and no Postgres connection left
    // open. (Redis clients are closed by the same app.close(); a server-wide CLIENT LIST count would be
    // disturbed by the test files running beside this one.)
    const connections = async () => {
      const client = new Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      try {
        const res = await client.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
          [t.db.name],
        );
        return res.rows[0].n;
      } finally {
        await client.end();
      }
    };
    const idle = await connections();
    await expect(startApp({ APP_SECRET: SECRET_B })).rejects.toThrow(/APP_SECRET_PREVIOUS/);
    expect(await connections()).toBe(idle);
  }, 60_000);

  it('with the old secret in APP_SECRET_PREVIOUS: starts (warning to rotate), sends DKIM-signed mail, old links work', async () => {
    // What an operator sees: a warning that points at `secrets rotate`, no secret in the log.
    const port = await freePort();
    const proc = startService(
      processEnv({
        PORT: String(port),
        LOG_LEVEL: 'warn',
        APP_ROLE: 'api',
        APP_SECRET: SECRET_B,
        APP_SECRET_PREVIOUS: SECRET_A,
      }),
    );
    try {
      await waitForHttp(`http://127.0.0.1:${port}/health/ready`);
      const warning = proc
        .output()
        .split('\n')
        .find((line) => line.includes('secrets rotate'));
      expect(warning && JSON.parse(warning)).toMatchObject({ level: 40, keys: 2 });
      for (const secret of [SECRET_A, SECRET_B]) expect(proc.output()).not.toContain(secret);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }

    await startApp({ APP_SECRET: SECRET_B, APP_SECRET_PREVIOUS: SECRET_A });
    const dkim = await sendSigned('previous@example.org');
    expect(dkim[0]).toMatchObject({ signingDomain: 'acme.test', status: { result: 'pass' } });
    // The workflow's secret, re-sealed, opens under APP_SECRET alone and is the one its create answer showed.
    expect(await app!.app.get(WorkflowSecrets).secretOf(signedWorkflow.id)).toBe(
      signedWorkflow.secret,
    );

    // A link signed under the old secret, as in mail delivered before the change.
    const clicked = await oneClick(app!, oldLinks.keptUrl);
    expect(clicked.status).toBe(200);
    const contact = await app!.request({
      method: 'GET',
      url: `/contacts/${oldLinks.keptContact}`,
      key: t.project.secretKey,
    });
    expect(contact.body.data.subscribed).toBe(false);

    // New keys are sealed under the new secret: from now on the database holds keys of both.
    const third = await app!.request({
      method: 'POST',
      url: '/domains',
      key: t.project.secretKey,
      body: { domain: 'third.test' },
    });
    expect(third.status).toBe(201);
    await stopApp();
  }, 60_000);

  it('`secrets rotate` re-seals under APP_SECRET (or changes nothing when a key does not open); then APP_SECRET alone suffices', async () => {
    const cliEnv = processEnv({ APP_SECRET: SECRET_B });
    const before = await sealedKeys();

    // Without the old secret the old keys cannot be re-sealed: nothing is written, the domains are named.
    const refused = runCli(['secrets', 'rotate', '--json'], cliEnv);
    expect(refused.status).toBe(1);
    const error = JSON.parse(refused.stdout).error;
    expect(error.code).toBe('APP_SECRET_MISMATCH');
    expect(error.message).toContain(
      '2 sealed DKIM keys (domains acme.test, second.test) open with neither APP_SECRET',
    );
    expect(error.message).toContain('Nothing was re-sealed');
    expect(await sealedKeys()).toEqual(before);
    // Not even the key that could be re-sealed (third.test, under SECRET_B) is written when others cannot.
    const partial = runCli(
      ['secrets', 'rotate', '--json'],
      processEnv({ APP_SECRET: UNRELATED, APP_SECRET_PREVIOUS: SECRET_B }),
    );
    expect(partial.status).toBe(1);
    expect(JSON.parse(partial.stdout).error.message).toContain(
      '2 sealed DKIM keys (domains acme.test, second.test)',
    );
    expect(await sealedKeys()).toEqual(before);

    // An endpoint saved with credentials before they were sealed: rotate seals them.
    await sql(
      `UPDATE webhook_endpoints SET url = 'https://u1:pw-clear@hooks.example.com/x', url_sealed = NULL`,
    );
    const rotated = runCli(['secrets', 'rotate', '--json'], {
      ...cliEnv,
      APP_SECRET_PREVIOUS: SECRET_A,
    });
    expect(rotated.stderr).toBe('');
    expect(rotated.status).toBe(0);
    expect(JSON.parse(rotated.stdout)).toEqual({
      resealed: 2,
      alreadyCurrent: 1,
      webhookSecrets: { resealed: 1, alreadyCurrent: 0 },
      workflowSecrets: { resealed: 1, alreadyCurrent: 0 },
      webhookCredentials: { resealed: 0, alreadyCurrent: 0, sealed: 1 },
      providerCredentials: { resealed: 0, alreadyCurrent: 0 },
    });
    const [endpoint] = await sql('SELECT url, url_sealed FROM webhook_endpoints');
    expect(endpoint).toEqual({
      url: 'https://***@hooks.example.com/x',
      url_sealed: expect.any(String),
    });
    const after = await sealedKeys();
    expect([...after.keys()]).toEqual(['acme.test', 'second.test', 'third.test']);
    expect(after.get('acme.test')).not.toBe(before.get('acme.test'));
    expect(after.get('second.test')).not.toBe(before.get('second.test'));
    expect(after.get('third.test')).toBe(before.get('third.test'));

    // Running it again finds nothing to do (text output for people).
    const again = runCli(['secrets', 'rotate'], { ...cliEnv, APP_SECRET_PREVIOUS: SECRET_A });
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(
      'Re-sealed 0 DKIM key(s) under the current APP_SECRET; 3 already were.',
    );
    expect(again.stdout).toContain('Re-sealed 0 webhook signing secret(s); 1 already were.');
    expect(again.stdout).toContain('Re-sealed 0 workflow signing secret(s); 1 already were.');
    expect(again.stdout).toContain(
      'Re-sealed 0 set(s) of webhook URL or WEBHOOK step credentials; 1 already were; sealed 0 endpoint URL(s)',
    );
    expect(await sealedKeys()).toEqual(after);

    // The old secret alone is now the wrong one.
    const old = await refusedBoot({ APP_ROLE: 'worker', APP_SECRET: SECRET_A });
    expect(old.code).toBe(1);
    expect(old.output).toContain(
      'Mailwright failed to start: 3 sealed DKIM keys (domains acme.test, second.test, third.test)',
    );

    await startApp({ APP_SECRET: SECRET_B });
    const dkim = await sendSigned('rotated@example.org');
    // The same key as before, re-sealed: it still matches the published DKIM record.
    expect(dkim[0]).toMatchObject({ signingDomain: 'acme.test', status: { result: 'pass' } });

    // Old links end when the old secret leaves APP_SECRET_PREVIOUS; links signed under the new one work.
    expect((await oneClick(app!, oldLinks.droppedUrl)).status).toBe(404);
    const fresh = app!.app
      .get(EmailsService)
      .unsubscribeUrl(t.project.id, oldLinks.droppedContact, null);
    expect((await oneClick(app!, fresh)).status).toBe(200);
  }, 90_000);
});
