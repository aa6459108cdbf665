import { Client } from 'pg';
import { newId } from '../src/database/id';
import { ReturnPathTokens } from '../src/sending/return-path';
import { plainMessage, sendInbound, smtpConversation, TEST_TOKENS } from './support/inbound';
import { freePort } from './support/processes';
import {
  createTestDatabase,
  flushPrefix,
  setupTestApp,
  startTestApp,
  testConfig,
  TestApp,
  uniqueName,
} from './support/test-app';

/**
 * The inbound listener (contract: "Bounces and complaints"): real SMTP and
 * LMTP sessions from nodemailer on loopback against an app started with
 * INBOUND_SMTP_PORT. It takes mail only for return paths whose token
 * verifies and for fbl@RETURN_PATH_DOMAIN, refuses everything else at RCPT,
 * enforces INBOUND_MAX_BYTES while the data streams, and answers 250 only
 * once the message is a row of inbound_messages.
 */
const MAX_BYTES = 20_000;
const DOMAIN = 'bounces.example.test';

type Stored = { id: string; mail_from: string; rcpt_to: string[]; raw: Buffer; status: string };

function storedId(response: string): string {
  const match = /Stored as ([0-9a-f-]{36})/.exec(response);
  if (!match) throw new Error(`no stored id in "${response}"`);
  return match[1];
}

describe('inbound SMTP listener (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let pg: Client;
  let port: number;

  const row = async (id: string): Promise<Stored | undefined> =>
    (await pg.query<Stored>('SELECT * FROM inbound_messages WHERE id = $1', [id])).rows[0];

  beforeAll(async () => {
    port = await freePort();
    ctx = await setupTestApp({
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
      INBOUND_MAX_BYTES: String(MAX_BYTES),
      RETURN_PATH_DOMAIN: DOMAIN,
    });
    app = ctx.app;
    pg = new Client({ connectionString: ctx.db.url });
    await pg.connect();
  });

  afterAll(async () => {
    await pg?.end();
    await ctx?.close();
  });

  it('accepts a return path whose token verifies, on any domain, and stores it before its 250', async () => {
    for (const domain of [DOMAIN, 'bounces.customer.example']) {
      const to = TEST_TOKENS.address(newId(), domain);
      const answer = await sendInbound(
        port,
        { from: 'mailer-daemon@mx.example.net', to: [to] },
        plainMessage(`ok ${domain}`),
      );
      expect(answer.code).toBe(250);
      // Read right after the 250: the row must already be committed.
      const stored = await row(storedId(answer.response));
      expect(stored).toMatchObject({ mail_from: 'mailer-daemon@mx.example.net', rcpt_to: [to] });
      expect(stored!.raw.toString()).toContain(`Subject: ok ${domain}`);
    }
  });

  it('accepts the null sender <> (DSNs are sent with it)', async () => {
    const answer = await sendInbound(
      port,
      { from: '', to: [TEST_TOKENS.address(newId(), DOMAIN)] },
      plainMessage('null sender'),
    );
    expect(answer.code).toBe(250);
    expect((await row(storedId(answer.response)))!.mail_from).toBe('');
  });

  it('accepts fbl@RETURN_PATH_DOMAIN, the complaint-loop address, in any case', async () => {
    for (const to of [`fbl@${DOMAIN}`, `FBL@${DOMAIN.toUpperCase()}`]) {
      const answer = await sendInbound(
        port,
        { from: 'arf@fbl.example.net', to: [to] },
        plainMessage('arf'),
      );
      expect(answer.code).toBe(250);
      const stored = await row(storedId(answer.response));
      expect(stored!.rcpt_to.map((rcpt) => rcpt.toLowerCase())).toEqual([to.toLowerCase()]);
    }
  });

  it('refuses with 550 5.1.1 at RCPT: an altered token, a forged one, an unknown address, fbl@ of another domain', async () => {
    const genuine = TEST_TOKENS.address(newId(), DOMAIN);
    const at = genuine.indexOf('@');
    const last = genuine[at - 1];
    const altered = `${genuine.slice(0, at - 1)}${last === '0' ? '1' : '0'}${genuine.slice(at)}`;
    const forged = new ReturnPathTokens('some-other-secret-some-other-secret-0000').address(
      newId(),
      DOMAIN,
    );
    const before = Number((await pg.query('SELECT count(*) FROM inbound_messages')).rows[0].count);
    for (const to of [
      altered,
      forged,
      `postmaster@${DOMAIN}`,
      'fbl@elsewhere.example',
      `b-123@${DOMAIN}`,
    ]) {
      const answer = await sendInbound(port, { from: '', to: [to] }, plainMessage('refused'));
      expect({ to, code: answer.code }).toEqual({ to, code: 550 });
      expect(answer.response).toContain('5.1.1');
    }
    const replies = await smtpConversation(port, [
      'EHLO test',
      'MAIL FROM:<>',
      `RCPT TO:<${forged}>`,
      'QUIT',
    ]);
    expect(replies[3]).toMatch(/^550 5\.1\.1/);
    const after = Number((await pg.query('SELECT count(*) FROM inbound_messages')).rows[0].count);
    expect(after).toBe(before);
  });

  it('advertises SIZE and answers 552 to a message over INBOUND_MAX_BYTES while storing nothing', async () => {
    const to = TEST_TOKENS.address(newId(), DOMAIN);
    const before = Number((await pg.query('SELECT count(*) FROM inbound_messages')).rows[0].count);
    // No SIZE declared in MAIL FROM: the limit is enforced on the data as it streams.
    const replies = await smtpConversation(
      port,
      ['EHLO test', 'MAIL FROM:<>', `RCPT TO:<${to}>`, 'DATA', '<data>', 'QUIT'],
      Buffer.from(plainMessage('too big', MAX_BYTES * 2)),
    );
    expect(replies[1]).toMatch(new RegExp(`^250[- ]SIZE ${MAX_BYTES}\\r$`, 'm'));
    expect(replies[4]).toMatch(/^354/);
    expect(replies[5]).toMatch(/^552/);
    // nodemailer declares the size, and is refused at MAIL FROM.
    const declared = await sendInbound(
      port,
      { from: '', to: [to] },
      plainMessage('too big', MAX_BYTES * 2),
    );
    expect(declared.code).toBe(552);
    const after = Number((await pg.query('SELECT count(*) FROM inbound_messages')).rows[0].count);
    expect(after).toBe(before);
    // Just under the limit still goes through.
    const fits = await sendInbound(
      port,
      { from: '', to: [to] },
      plainMessage('fits', MAX_BYTES - 1000),
    );
    expect(fits.code).toBe(250);
  });

  it('does not answer 250 while the row cannot be written, and answers it once it is', async () => {
    const locker = new Client({ connectionString: ctx.db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE inbound_messages IN ACCESS EXCLUSIVE MODE');
      let answered = false;
      const sending = sendInbound(
        port,
        { from: '', to: [TEST_TOKENS.address(newId(), DOMAIN)] },
        plainMessage('waits for the lock'),
      ).then((answer) => {
        answered = true;
        return answer;
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(answered).toBe(false);
      await locker.query('COMMIT');
      const answer = await sending;
      expect(answer.code).toBe(250);
      expect(await row(storedId(answer.response))).toBeDefined();
    } finally {
      await locker.end();
    }
  });

  it('counts refusals and stored messages in mailwright_inbound_messages_total', async () => {
    const res = await app.request({ method: 'GET', url: '/metrics' });
    expect(res.raw).toMatch(/mailwright_inbound_messages_total\{outcome="stored"\} [1-9]/);
    expect(res.raw).toMatch(
      /mailwright_inbound_messages_total\{outcome="refused_recipient"\} [1-9]/,
    );
    expect(res.raw).toMatch(/mailwright_inbound_messages_total\{outcome="refused_size"\} [1-9]/);
  });
});

describe('inbound LMTP listener (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let pg: Client;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    ctx = await setupTestApp({
      APP_ROLE: 'worker',
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
      INBOUND_LMTP: 'true',
      RETURN_PATH_DOMAIN: DOMAIN,
    });
    pg = new Client({ connectionString: ctx.db.url });
    await pg.connect();
  });

  afterAll(async () => {
    await pg?.end();
    await ctx?.close();
  });

  it('speaks LMTP to a Postfix in front (nodemailer lmtp: true) and refuses unknown recipients the same way', async () => {
    const to = TEST_TOKENS.address(newId(), DOMAIN);
    const answer = await sendInbound(port, { from: '', to: [to] }, plainMessage('lmtp'), {
      lmtp: true,
    });
    expect(answer.code).toBe(250);
    const stored = await pg.query('SELECT rcpt_to FROM inbound_messages WHERE id = $1', [
      storedId(answer.response),
    ]);
    expect(stored.rows[0].rcpt_to).toEqual([to]);
    const refused = await sendInbound(
      port,
      { from: '', to: [`nobody@${DOMAIN}`] },
      plainMessage('x'),
      {
        lmtp: true,
      },
    );
    expect(refused.code).toBe(550);
    // An SMTP client is told to say LHLO: this port speaks LMTP only.
    const replies = await smtpConversation(port, ['EHLO test']);
    expect(replies[0]).toMatch(/^220 .*LMTP/);
  });
});

describe('inbound listener and roles (e2e)', () => {
  it('an api-role process does not listen, even with INBOUND_SMTP_PORT set', async () => {
    const port = await freePort();
    const ctx = await setupTestApp({
      APP_ROLE: 'api',
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
    });
    try {
      const answer = await sendInbound(
        port,
        { from: '', to: [`fbl@x.example`] },
        plainMessage('x'),
      );
      expect(answer.response).toMatch(/ECONNREFUSED/);
    } finally {
      await ctx.close();
    }
  });
});

describe('inbound listener shutdown (e2e)', () => {
  it('on shutdown it stops accepting connections, and a message being stored still gets its 250 and its row', async () => {
    const port = await freePort();
    const db = await createTestDatabase();
    const prefix = uniqueName('mwt_inshut');
    const app = await startTestApp(
      testConfig(db.url, prefix, {
        APP_ROLE: 'worker',
        INBOUND_SMTP_PORT: String(port),
        INBOUND_SMTP_HOST: '127.0.0.1',
        RETURN_PATH_DOMAIN: DOMAIN,
      }),
    );
    const locker = new Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE inbound_messages IN ACCESS EXCLUSIVE MODE');
      const sending = sendInbound(
        port,
        { from: '', to: [TEST_TOKENS.address(newId(), DOMAIN)] },
        plainMessage('stored during shutdown'),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      const closing = app.close();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const late = await sendInbound(
        port,
        { from: '', to: [`fbl@${DOMAIN}`] },
        plainMessage('late'),
      );
      expect(late.response).toMatch(/ECONNREFUSED/);
      await locker.query('COMMIT');
      const answer = await sending;
      expect(answer.code).toBe(250);
      await closing;
      const stored = await locker.query('SELECT raw FROM inbound_messages WHERE id = $1', [
        storedId(answer.response),
      ]);
      expect(stored.rows[0].raw.toString()).toContain('stored during shutdown');
    } finally {
      await locker.end();
      await flushPrefix(prefix);
      await db.drop();
    }
  });
});
