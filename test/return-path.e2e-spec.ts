import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { EmailSource } from '../src/sending/email.entity';
import { ReturnPathTokens } from '../src/sending/return-path';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { DnsRecord, DomainBody, verifyDomainForTest } from './support/domains';
import {
  insertEmailsWithoutJobs,
  SENDER_DOMAIN,
  SendingTest,
  startSendingTest,
  verifyDkim,
  waitForEmailStatus,
} from './support/sending';
import { ReceivedMessage } from './support/smtp-server';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * The return path of issue 25 (items 1 and 7): every message's envelope
 * sender is `b-<token>@<domain>` naming its email, on `bounces.<sending
 * domain>` once that domain's RETURN_PATH CNAME is verified, else on
 * RETURN_PATH_DOMAIN; DSN is asked for where the relay offers it.
 */
const RETURN_PATH_DOMAIN = 'rp.mailwright.test';
const RETURN_PATH = /^b-[a-z0-9]{1,60}@(.+)$/;

function returnPathRecord(domain: DomainBody): DnsRecord {
  const record = domain.records.find((r) => r.purpose === 'RETURN_PATH');
  if (!record) throw new Error(`no RETURN_PATH record in ${JSON.stringify(domain.records)}`);
  return record;
}

/** Sends one message and waits for its final status; answers the email record. */
async function sendOne(
  t: SendingTest,
  to: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the assertions read fields directly
): Promise<any> {
  const res = await t.send({ to, from: 'hello@acme.test', subject: 'Hi', body: '<p>Hi</p>' });
  expect(res.status).toBe(200);
  return waitForEmailStatus(t.app, t.project.secretKey, res.body.data.emails[0].id, [
    'SENT',
    'BOUNCED',
    'FAILED',
  ]);
}

function onlyMessageTo(t: SendingTest, to: string): ReceivedMessage {
  const messages = t.smtp.messagesTo(to);
  expect(messages).toHaveLength(1);
  return messages[0];
}

describe('Return path: envelope sender per message (SMTP relay without DSN)', () => {
  let t: SendingTest;
  let tokens: ReturnPathTokens;
  let domain: DomainBody;

  const domainNow = async (): Promise<DomainBody> =>
    (
      await t.app.request<{ data: DomainBody }>({
        method: 'GET',
        url: `/domains/${domain.id}`,
        key: t.project.secretKey,
      })
    ).body.data;

  const verifyNow = async (): Promise<DomainBody> => {
    const res = await t.app.request<{ data: DomainBody }>({
      method: 'POST',
      url: `/domains/${domain.id}/verify`,
      key: t.project.secretKey,
    });
    expect(res.status).toBe(200);
    return res.body.data;
  };

  beforeAll(async () => {
    t = await startSendingTest('ReturnPath', { RETURN_PATH_DOMAIN });
    tokens = new ReturnPathTokens(t.app.config.appSecret);
    const list = await t.app.request<{ data: { items: DomainBody[] } }>({
      method: 'GET',
      url: '/domains',
      key: t.project.secretKey,
    });
    domain = list.body.data.items.find((d) => d.domain === SENDER_DOMAIN)!;
  });

  afterAll(async () => t?.close());

  beforeEach(() => {
    t.smtp.reset();
    t.dns.removeCname(`bounces.${SENDER_DOMAIN}`);
  });

  it('lists the bounces. CNAME as a record that is not required; the domain is VERIFIED without it', async () => {
    expect(domain.status).toBe('VERIFIED');
    expect(returnPathRecord(domain)).toEqual({
      type: 'CNAME',
      name: 'bounces.acme.test',
      value: RETURN_PATH_DOMAIN,
      purpose: 'RETURN_PATH',
      required: false,
      status: 'PENDING',
      error: 'NXDOMAIN',
    });
    expect(t.dns.queries).toContain('CNAME bounces.acme.test');
  });

  it('MAIL FROM is b-<token>@RETURN_PATH_DOMAIN naming the email while the CNAME is not verified; From is unchanged', async () => {
    const email = await sendOne(t, 'plain@example.org');
    expect(email.status).toBe('SENT');
    const message = onlyMessageTo(t, 'plain@example.org');
    expect(message.from).toMatch(RETURN_PATH);
    expect(message.from.length).toBeLessThanOrEqual(2 + 60 + 1 + RETURN_PATH_DOMAIN.length);
    expect(message.from.split('@')[1]).toBe(RETURN_PATH_DOMAIN);
    expect(tokens.verifyAddress(message.from)).toBe(email.id);
    expect(email.returnPath).toBe(message.from);
    expect(message.parsed?.from?.value).toEqual([{ address: 'hello@acme.test', name: '' }]);
    // The relay does not offer DSN (and refuses its parameters): none were sent, and it went.
    expect(message.mailFromArgs).toEqual({});
    expect(message.rcptToArgs).toEqual([{}]);
  });

  it('uses bounces.<domain> once the CNAME verifies, keeps what each email was sent with, and falls back when it goes', async () => {
    const before = await sendOne(t, 'before@example.org');
    expect(before.returnPath).toBe(onlyMessageTo(t, 'before@example.org').from);
    expect(before.returnPath.endsWith(`@${RETURN_PATH_DOMAIN}`)).toBe(true);

    t.dns.setCname(`bounces.${SENDER_DOMAIN}`, `${RETURN_PATH_DOMAIN.toUpperCase()}.`);
    const verified = await verifyNow();
    expect(verified.status).toBe('VERIFIED');
    expect(returnPathRecord(verified)).toMatchObject({ status: 'VERIFIED' });
    expect(returnPathRecord(verified)).not.toHaveProperty('error');

    const aligned = await sendOne(t, 'aligned@example.org');
    const alignedFrom = onlyMessageTo(t, 'aligned@example.org').from;
    expect(alignedFrom).toMatch(RETURN_PATH);
    expect(alignedFrom.split('@')[1]).toBe('bounces.acme.test');
    expect(tokens.verifyAddress(alignedFrom)).toBe(aligned.id);
    expect(aligned.returnPath).toBe(alignedFrom);

    // The record goes: mail falls back to RETURN_PATH_DOMAIN, and every email keeps what it was sent with.
    t.dns.removeCname(`bounces.${SENDER_DOMAIN}`);
    const removed = await verifyNow();
    expect(removed.status).toBe('VERIFIED');
    expect(returnPathRecord(removed)).toMatchObject({ status: 'PENDING', error: 'NXDOMAIN' });
    const after = await sendOne(t, 'after@example.org');
    expect(onlyMessageTo(t, 'after@example.org').from.split('@')[1]).toBe(RETURN_PATH_DOMAIN);
    for (const [email, from] of [
      [aligned, alignedFrom],
      [before, before.returnPath],
    ]) {
      const now = await t.app.request({
        method: 'GET',
        url: `/emails/${email.id}`,
        key: t.project.secretKey,
      });
      expect(now.body.data.returnPath).toBe(from);
    }
    expect(tokens.verifyAddress(after.returnPath)).toBe(after.id);
  });

  it('a CNAME to another target is FAILED with what was found, and the domain stays VERIFIED', async () => {
    t.dns.setCname(`bounces.${SENDER_DOMAIN}`, 'bounces.someone-else.example');
    const checked = await verifyNow();
    expect(checked.status).toBe('VERIFIED');
    expect(returnPathRecord(checked)).toMatchObject({
      status: 'FAILED',
      error: 'MISMATCH',
      found: ['bounces.someone-else.example'],
    });
    const email = await sendOne(t, 'mismatch@example.org');
    expect(onlyMessageTo(t, 'mismatch@example.org').from.split('@')[1]).toBe(RETURN_PATH_DOMAIN);
    expect(email.returnPath.split('@')[1]).toBe(RETURN_PATH_DOMAIN);
    expect((await domainNow()).records).toHaveLength(5);
  });

  it('an email not yet delivered shows the return path it would use now; a 550 bounce keeps the one it was sent with', async () => {
    const [queued] = await insertEmailsWithoutJobs(t, 'waiting@example.org', [
      EmailSource.WORKFLOW,
    ]);
    const show = async (id: string) =>
      (await t.app.request({ method: 'GET', url: `/emails/${id}`, key: t.project.secretKey })).body
        .data;
    const planned = await show(queued.id);
    expect(planned.status).toBe('QUEUED');
    expect(planned.returnPath.split('@')[1]).toBe(RETURN_PATH_DOMAIN);
    expect(tokens.verifyAddress(planned.returnPath)).toBe(queued.id);

    t.dns.setCname(`bounces.${SENDER_DOMAIN}`, RETURN_PATH_DOMAIN);
    await verifyNow();
    expect((await show(queued.id)).returnPath.split('@')[1]).toBe('bounces.acme.test');
    // The list shows the same.
    const list = await t.app.request({
      method: 'GET',
      url: '/emails?status=QUEUED',
      key: t.project.secretKey,
    });
    const listed = list.body.data.items.find((e: { id: string }) => e.id === queued.id);
    expect(listed.returnPath).toBe((await show(queued.id)).returnPath);

    t.smtp.fail({ stage: 'RCPT', code: 550, recipient: 'gone@example.org' });
    const bounced = await sendOne(t, 'gone@example.org');
    expect(bounced.status).toBe('BOUNCED');
    expect(bounced.returnPath.split('@')[1]).toBe('bounces.acme.test');
    expect(tokens.verifyAddress(bounced.returnPath)).toBe(bounced.id);
  });
});

describe('Return path: DSN requested from a relay that offers it', () => {
  let t: SendingTest;

  beforeAll(async () => {
    // RETURN_PATH_DOMAIN left to its default: bounces.<host of PUBLIC_URL>.
    t = await startSendingTest('ReturnPathDsn', {}, { dsn: true });
  });

  afterAll(async () => t?.close());

  it('sends RET=HDRS and ENVID on MAIL FROM, NOTIFY=FAILURE,DELAY and ORCPT on RCPT TO', async () => {
    const tokens = new ReturnPathTokens(t.app.config.appSecret);
    const email = await sendOne(t, 'dsn@example.org');
    expect(email.status).toBe('SENT');
    const message = onlyMessageTo(t, 'dsn@example.org');
    expect(message.from.split('@')[1]).toBe('bounces.mail.example.test');
    expect(tokens.verifyAddress(message.from)).toBe(email.id);
    expect(message.mailFromArgs.RET).toBe('HDRS');
    // ENVID is the return path's local part: a DSN's Original-Envelope-Id names the email by itself.
    expect(message.mailFromArgs.ENVID).toBe(message.from.split('@')[0]);
    expect(tokens.verifyAddress(String(message.mailFromArgs.ENVID))).toBe(email.id);
    expect(message.rcptToArgs).toEqual([
      { NOTIFY: 'FAILURE,DELAY', ORCPT: 'rfc822;dsn@example.org' },
    ]);
  });
});

describe('Return path in the .eml outbox', () => {
  let dns: TestDnsServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;

  beforeAll(async () => {
    dns = await startTestDnsServer();
    ctx = await setupTestApp({
      DNS_SERVERS: dns.address,
      EMAIL_RATE_PER_SECOND: '1000',
      RETURN_PATH_DOMAIN,
    });
    app = ctx.app;
    project = await app.createProject('ReturnPathOutbox');
  });

  afterAll(async () => {
    await ctx?.close();
    await dns?.stop();
  });

  async function sendToOutbox(from: string, to: string): Promise<{ id: string; raw: Buffer }> {
    const res = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: { to, from, subject: 'Outbox', body: '<p>Hello</p>' },
    });
    expect(res.status).toBe(200);
    const id: string = res.body.data.emails[0].id;
    await waitForEmailStatus(app, project.secretKey, id, ['SENT']);
    const dir = app.config.mailOutboxDir;
    const file = readdirSync(dir).find((f) => f.includes(id) && f.endsWith('.eml'));
    if (!file) throw new Error(`no .eml for ${id} in ${dir}`);
    return { id, raw: readFileSync(join(dir, file)) };
  }

  it('each file begins with Return-Path: <b-<token>@domain>, outside the DKIM signature', async () => {
    const tokens = new ReturnPathTokens(app.config.appSecret);
    // An unverified sender (allowed in outbox mode): unsigned, on RETURN_PATH_DOMAIN.
    const unsigned = await sendToOutbox('me@laptop.test', 'a@example.org');
    const first = unsigned.raw.toString('utf8').split('\r\n')[0];
    expect(first).toMatch(/^Return-Path: <b-[a-z0-9]+@rp\.mailwright\.test>$/);
    expect(tokens.verifyAddress(first.slice('Return-Path: <'.length, -1))).toBe(unsigned.id);

    // A verified domain with its CNAME: on bounces.<domain>, and the DKIM signature still verifies.
    const domain = await verifyDomainForTest(app, project, 'outbox-rp.test', dns);
    dns.setCname('bounces.outbox-rp.test', RETURN_PATH_DOMAIN);
    await app.request({
      method: 'POST',
      url: `/domains/${domain.id}/verify`,
      key: project.secretKey,
    });
    const signed = await sendToOutbox('hi@outbox-rp.test', 'b@example.org');
    const head = signed.raw.toString('utf8').split('\r\n')[0];
    expect(head).toMatch(/^Return-Path: <b-[a-z0-9]+@bounces\.outbox-rp\.test>$/);
    expect(tokens.verifyAddress(head.slice('Return-Path: <'.length, -1))).toBe(signed.id);
    expect((await verifyDkim(signed.raw, dns))[0].status.result).toBe('pass');
    const parsed = await simpleParser(signed.raw);
    expect(parsed.from?.value[0].address).toBe('hi@outbox-rp.test');
  });
});
