import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { simpleParser } from 'mailparser';
import { DataSource } from 'typeorm';
import { ContactsService } from '../src/contacts/contacts.service';
import { DeliveryRecovery } from '../src/sending/delivery-recovery';
import { EmailSource } from '../src/sending/email.entity';
import { EmailsService } from '../src/sending/emails.service';
import { QUEUES } from '../src/queue/queue.constants';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { verifyDomainForTest } from './support/domains';
import { verifyDkim, waitForEmailStatus } from './support/sending';
import { startTestSmtpServer, TestSmtpServer } from './support/smtp-server';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One header of a raw message, unfolded (mailparser folds the List-* headers into one object). */
function rawHeader(raw: Buffer, name: string): string | null {
  const head = raw.toString('utf8').split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, ' ');
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line ? line.slice(name.length + 1).trim() : null;
}

describe('Delivery: retries, bounces, suppression, idempotency, unsubscribe', () => {
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;

  const send = (body: unknown, headers?: Record<string, string>) =>
    app.request({ method: 'POST', url: '/v1/send', key: project.secretKey, body, headers });
  const contact = async (id: string) =>
    (await app.request({ method: 'GET', url: `/contacts/${id}`, key: project.secretKey })).body.data;

  beforeAll(async () => {
    dns = await startTestDnsServer();
    smtp = await startTestSmtpServer();
    ctx = await setupTestApp({
      DNS_SERVERS: dns.address,
      SMTP_URL: smtp.url,
      PUBLIC_URL: 'https://mail.example.test',
      EMAIL_RATE_PER_SECOND: '1000',
      DELIVERY_BACKOFF_MS: '100',
      DELIVERY_ATTEMPTS: '4',
    });
    app = ctx.app;
    project = await app.createProject('Delivery');
    await verifyDomainForTest(app, project, 'acme.test', dns);
  });

  afterAll(async () => {
    await ctx?.close();
    await smtp?.close();
    await dns?.stop();
  });

  beforeEach(() => smtp.reset());

  it('retries a 451 with backoff and delivers once: SENT after 3 attempts', async () => {
    smtp.fail({ stage: 'RCPT', code: 451, recipient: 'slow@example.org', times: 2 });
    const res = await send({ to: 'slow@example.org', from: 'hello@acme.test', subject: 'Retry', body: '<p>x</p>' });
    expect(res.status).toBe(200);
    const record = await waitForEmailStatus(app, project.secretKey, res.body.data.emails[0].id, ['SENT', 'FAILED']);
    expect(record.status).toBe('SENT');
    expect(record.attempts).toBe(3);
    expect(record.error).toBeNull();
    expect(smtp.refusals).toEqual(['451 RCPT slow@example.org', '451 RCPT slow@example.org']);
    expect(smtp.messagesTo('slow@example.org')).toHaveLength(1);
  });

  it('marks FAILED when transient failures outlast the attempts, and records email.failed', async () => {
    smtp.fail({ stage: 'DATA', code: 421, recipient: 'down@example.org' });
    const res = await send({ to: 'down@example.org', from: 'hello@acme.test', subject: 'Never', body: '<p>x</p>' });
    const record = await waitForEmailStatus(app, project.secretKey, res.body.data.emails[0].id, ['FAILED', 'SENT']);
    expect(record.status).toBe('FAILED');
    expect(record.attempts).toBe(4);
    expect(record.error).toContain('421');
    expect(smtp.messagesTo('down@example.org')).toHaveLength(0);
    const events = await app.request({ method: 'GET', url: `/events?contactId=${record.contactId}`, key: project.secretKey });
    expect(events.body.data.items.map((e: { name: string }) => e.name)).toContain('email.failed');
  });

  it('a 550 bounces: BOUNCED, contact suppressed and unsubscribed, later sends SUPPRESSED and never transmitted', async () => {
    smtp.fail({ stage: 'RCPT', code: 550, recipient: 'gone@example.org', message: 'No such user' });
    const res = await send({ to: 'gone@example.org', from: 'hello@acme.test', subject: 'Bounce', body: '<p>x</p>', subscribed: true });
    const record = await waitForEmailStatus(app, project.secretKey, res.body.data.emails[0].id, ['BOUNCED', 'SENT', 'FAILED']);
    expect(record.status).toBe('BOUNCED');
    expect(record.attempts).toBe(1);
    expect(record.bouncedAt).not.toBeNull();
    expect(record.error).toContain('550');
    const bounced = await contact(record.contactId);
    expect(bounced).toMatchObject({ suppressed: true, subscribed: false });
    const events = await app.request({ method: 'GET', url: `/events?contactId=${record.contactId}`, key: project.secretKey });
    expect(events.body.data.items.map((e: { name: string }) => e.name)).toContain('email.bounced');

    smtp.clearRules();
    const again = await send({ to: 'gone@example.org', from: 'hello@acme.test', subject: 'Again', body: '<p>x</p>' });
    expect(again.status).toBe(200);
    expect(again.body.data.emails[0].status).toBe('SUPPRESSED');
    const later = await waitForEmailStatus(app, project.secretKey, again.body.data.emails[0].id, ['SUPPRESSED']);
    expect(later.attempts).toBe(0);
    await sleep(500);
    expect(smtp.messagesTo('gone@example.org')).toHaveLength(0);
    expect(smtp.refusals).toEqual(['550 RCPT gone@example.org']);
  });

  it('Idempotency-Key: same body replays the first response with one email; another body is 409', async () => {
    const body = { to: 'idem@example.org', from: 'hello@acme.test', subject: 'Once', body: '<p>x</p>' };
    const headers = { 'idempotency-key': 'order-1001' };
    const first = await send(body, headers);
    expect(first.status).toBe(200);
    // Same request with keys in another order: the same request.
    const replay = await send({ body: body.body, subject: body.subject, from: body.from, to: body.to }, headers);
    expect(replay.status).toBe(200);
    // Byte for byte: same keys in the same order, same timestamp and ids.
    expect(replay.raw).toBe(first.raw);
    const changed = await send({ ...body, subject: 'Twice' }, headers);
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    await smtp.waitForMessages(1);
    await sleep(300);
    expect(smtp.messagesTo('idem@example.org')).toHaveLength(1);
    const list = await app.request({ method: 'GET', url: `/emails?contactId=${first.body.data.contact}`, key: project.secretKey });
    expect(list.body.data.total).toBe(1);

    for (const key of ['x'.repeat(256), '', 'caf\u00e9']) {
      const bad = await send(body, { 'idempotency-key': key });
      expect(bad.status).toBe(400);
      expect(bad.body.error.errors[0].field).toBe('Idempotency-Key');
    }
  });

  it('Idempotency-Key: keys are per project and expire after 24 hours', async () => {
    const body = { to: 'expiry@example.org', from: 'hello@acme.test', subject: 'Day one', body: '<p>x</p>' };
    const headers = { 'idempotency-key': 'daily-digest' };
    const first = await send(body, headers);
    expect(first.status).toBe(200);

    // Another project may use the same key for its own, different request.
    const other = await app.createProject('Idempotency other');
    await verifyDomainForTest(app, other, 'other.test', dns);
    const foreign = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: other.secretKey,
      body: { ...body, from: 'hello@other.test', subject: 'Other project' },
      headers,
    });
    expect(foreign.status).toBe(200);
    expect(foreign.body.data.emails[0].id).not.toBe(first.body.data.emails[0].id);

    const dataSource = app.app.get(DataSource);
    await dataSource.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE project_id = $1 AND key = $2`,
      [project.id, 'daily-digest'],
    );
    // Past 24 h the key is free again: a different body is new work, not a 409.
    const dayTwo = await send({ ...body, subject: 'Day two' }, headers);
    expect(dayTwo.status).toBe(200);
    expect(dayTwo.body.data.emails[0].id).not.toBe(first.body.data.emails[0].id);
    expect((await send({ ...body, subject: 'Day two' }, headers)).raw).toBe(dayTwo.raw);

    // The sweep deletes keys past their 24 hours and leaves live ones.
    await dataSource.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE project_id = $1 AND key = $2`,
      [project.id, 'daily-digest'],
    );
    const live = await send({ ...body, subject: 'Live' }, { 'idempotency-key': 'still-live' });
    expect(live.status).toBe(200);
    await app.app.get(DeliveryRecovery).sweep();
    const keys = await dataSource.query('SELECT key FROM idempotency_keys WHERE project_id = $1 ORDER BY key', [project.id]);
    expect(keys.map((k: { key: string }) => k.key)).not.toContain('daily-digest');
    expect(keys.map((k: { key: string }) => k.key)).toContain('still-live');
    await smtp.waitForMessages(4);
  });

  it('Idempotency-Key: concurrent duplicates do the work once and all get the same answer', async () => {
    const body = { to: ['race1@example.org', 'race2@example.org'], from: 'hello@acme.test', subject: 'Race', body: '<p>x</p>' };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => send(body, { 'idempotency-key': 'race-key' })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    for (const r of results) expect(r.body).toEqual(results[0].body);
    await smtp.waitForMessages(2);
    await sleep(500);
    expect(smtp.accepted).toBe(2);
    const list = await app.request({ method: 'GET', url: `/emails?contactId=${results[0].body.data.contact}`, key: project.secretKey });
    expect(list.body.data.total).toBe(1);
  });

  it('recovers QUEUED emails whose job was never added (crash between commit and enqueue)', async () => {
    const dataSource = app.app.get(DataSource);
    const emails = app.app.get(EmailsService);
    const email = await dataSource.transaction(async (manager) => {
      const { contact } = await app.app
        .get(ContactsService)
        .upsertByEmail(manager, project.id, 'orphan@example.org', { defaultSubscribed: false });
      const composed = await emails.compose({
        projectId: project.id,
        contact,
        source: EmailSource.TRANSACTIONAL,
        marketing: false,
        from: { email: 'hello@acme.test' },
        content: { subject: 'Orphan', body: '<p>x</p>' },
      });
      await emails.insert(manager, [composed]);
      return composed;
    });
    // The process "died" before enqueue: nothing is delivered until the sweep finds the row.
    await sleep(300);
    expect(smtp.accepted).toBe(0);
    expect(await app.app.get(DeliveryRecovery).sweep(0)).toBeGreaterThanOrEqual(1);
    const record = await waitForEmailStatus(app, project.secretKey, email.id, ['SENT']);
    expect(record.attempts).toBe(1);
    expect(smtp.messagesTo('orphan@example.org')).toHaveLength(1);
    // Sweeping again re-adds nothing that is not QUEUED.
    await app.app.get(DeliveryRecovery).sweep(0);
    await sleep(300);
    expect(smtp.messagesTo('orphan@example.org')).toHaveLength(1);
  });

  it('one job per email with the email id as job id, transactional before workflow before campaign', async () => {
    const dataSource = app.app.get(DataSource);
    const emails = app.app.get(EmailsService);
    const composed = await dataSource.transaction(async (manager) => {
      const { contact } = await app.app
        .get(ContactsService)
        .upsertByEmail(manager, project.id, 'priority@example.org', { defaultSubscribed: false });
      const rows = [];
      for (const source of [EmailSource.CAMPAIGN, EmailSource.WORKFLOW, EmailSource.TRANSACTIONAL]) {
        rows.push(
          await emails.compose({
            projectId: project.id,
            contact,
            source,
            marketing: false,
            from: { email: 'hello@acme.test' },
            content: { subject: source, body: '<p>x</p>' },
          }),
        );
      }
      await emails.insert(manager, rows);
      return rows;
    });
    await emails.enqueue(composed);
    await emails.enqueue(composed); // a second enqueue of the same rows adds nothing
    const queue = app.app.get<Queue>(getQueueToken(QUEUES.DELIVERY));
    const jobs = await Promise.all(composed.map((e) => queue.getJob(e.id)));
    expect(jobs.map((j) => j?.id)).toEqual(composed.map((e) => e.id));
    expect(jobs.map((j) => j?.data)).toEqual(composed.map((e) => ({ emailId: e.id })));
    const [campaign, workflow, transactional] = jobs.map((j) => j!.opts.priority!);
    // BullMQ runs lower numbers first.
    expect(transactional).toBeLessThan(workflow);
    expect(workflow).toBeLessThan(campaign);
    for (const e of composed) await waitForEmailStatus(app, project.secretKey, e.id, ['SENT']);
    expect(smtp.messagesTo('priority@example.org')).toHaveLength(3);
  });

  it('suppress and unsubscribe go through ContactsService and report whether anything changed', async () => {
    const contacts = app.app.get(ContactsService);
    const dataSource = app.app.get(DataSource);
    const created = await app.request({ method: 'POST', url: '/contacts', key: project.secretKey, body: { email: 'states@example.org' } });
    const id = created.body.data.id;
    const cause = { emailId: null, data: { source: 'test' } };

    const first = await dataSource.transaction((m) => contacts.unsubscribe(m, project.id, id, cause));
    expect(first).toMatchObject({ changed: true, contact: { id, subscribed: false } });
    expect(first.event).toMatchObject({ name: 'contact.unsubscribed', contactId: id, data: { source: 'test' } });
    const second = await dataSource.transaction((m) => contacts.unsubscribe(m, project.id, id, cause));
    expect(second).toMatchObject({ changed: false, event: null, contact: { id, subscribed: false } });

    expect(await dataSource.transaction((m) => contacts.suppress(m, project.id, id))).toBe(true);
    expect(await dataSource.transaction((m) => contacts.suppress(m, project.id, id))).toBe(false);
    expect(await contact(id)).toMatchObject({ suppressed: true, subscribed: false });

    // Another project's contact is untouched and reads as missing.
    const other = await app.createProject('States other');
    const foreign = await dataSource.transaction((m) => contacts.unsubscribe(m, other.id, id, cause));
    expect(foreign).toEqual({ contact: null, changed: false, event: null });
    expect(await dataSource.transaction((m) => contacts.suppress(m, other.id, id))).toBe(false);
    const events = await app.request({ method: 'GET', url: `/events?contactId=${id}&name=contact.unsubscribed`, key: project.secretKey });
    expect(events.body.data.total).toBe(1);
  });

  it('marketing mail: List-Unsubscribe one-click link unsubscribes; tampered token is 404; unsubscribed contacts get no more', async () => {
    const template = await app.request({
      method: 'POST',
      url: '/templates',
      key: project.secretKey,
      body: {
        name: 'Newsletter',
        subject: 'News for {{ email }}',
        body: '<p>News</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
        type: 'MARKETING',
        from: 'news@acme.test',
      },
    });
    const res = await send({ to: 'reader@example.org', template: template.body.data.id, subscribed: true });
    expect(res.status).toBe(200);
    await smtp.waitForMessages(1);
    const message = smtp.messages[0].parsed!;
    const raw = smtp.messages[0].raw;
    const listUnsubscribe = rawHeader(raw, 'List-Unsubscribe');
    expect(listUnsubscribe).toMatch(/^<https:\/\/mail\.example\.test\/unsubscribe\/[A-Za-z0-9_-]+>$/);
    expect(rawHeader(raw, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
    const url = listUnsubscribe!.slice(1, -1);
    // The link in the body is the same signed link, and DKIM covers both headers.
    expect(message.html).toContain(`href="${url}"`);
    const dkim = await verifyDkim(raw, dns);
    expect(dkim[0].status.result).toBe('pass');
    const signed = /\bh=([^;]+)/.exec(rawHeader(raw, 'DKIM-Signature') ?? '')![1].replace(/\s+/g, '').toLowerCase().split(':');
    expect(signed).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post', 'from', 'subject']));

    const path = new URL(url).pathname;
    const token = path.split('/').pop()!;
    const tampered = path.slice(0, -5) + (token.slice(-5, -4) === 'A' ? 'B' : 'A') + token.slice(-4);
    const forged = await app.request({ method: 'POST', url: tampered, body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(forged.status).toBe(404);
    expect((await contact(res.body.data.contact)).subscribed).toBe(true);
    expect((await app.request({ method: 'GET', url: tampered })).status).toBe(404);

    const page = await app.request({ method: 'GET', url: path });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.raw).toContain('reader@example.org');
    expect((await contact(res.body.data.contact)).subscribed).toBe(true);

    const oneClick = await app.request({
      method: 'POST',
      url: path,
      body: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(oneClick.status).toBe(200);
    expect((await contact(res.body.data.contact)).subscribed).toBe(false);
    // A second click (or a mail client retrying the POST) changes nothing and records nothing.
    const again2 = await app.request({ method: 'POST', url: path, body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(again2.status).toBe(200);
    const events = await app.request({ method: 'GET', url: `/events?contactId=${res.body.data.contact}&name=contact.unsubscribed`, key: project.secretKey });
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0]).toMatchObject({ emailId: res.body.data.emails[0].id, data: { source: 'unsubscribe-link', emailId: res.body.data.emails[0].id } });
    const confirmed = await app.request({ method: 'GET', url: path });
    expect(confirmed.raw).toContain('does not receive marketing email');

    smtp.reset();
    const again = await send({ to: 'reader@example.org', template: template.body.data.id });
    expect(again.body.data.emails[0].status).toBe('SUPPRESSED');
    // Transactional mail still reaches an unsubscribed contact.
    const receipt = await send({ to: 'reader@example.org', from: 'hello@acme.test', subject: 'Receipt', body: '<p>r</p>' });
    expect(receipt.body.data.emails[0].status).toBe('QUEUED');
    await smtp.waitForMessages(1);
    await sleep(300);
    expect(smtp.messages.map((m) => m.parsed!.subject)).toEqual(['Receipt']);

    // An erased contact's link is a 404 page, for the confirmation and the one-click POST alike.
    await app.request({ method: 'DELETE', url: `/contacts/${res.body.data.contact}`, key: project.secretKey });
    expect((await app.request({ method: 'GET', url: path })).status).toBe(404);
    const erased = await app.request({ method: 'POST', url: path, body: 'List-Unsubscribe=One-Click', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(erased.status).toBe(404);
    expect(erased.raw).toContain('Link not valid');
  });
});

describe('Delivery without SMTP_URL: the .eml outbox', () => {
  let dns: TestDnsServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;

  beforeAll(async () => {
    dns = await startTestDnsServer();
    ctx = await setupTestApp({ DNS_SERVERS: dns.address, EMAIL_RATE_PER_SECOND: '1000' });
  });

  afterAll(async () => {
    await ctx?.close();
    await dns?.stop();
  });

  it('writes each message as a DKIM-signed RFC 5322 file', async () => {
    const project = await ctx.app.createProject('Outbox');
    await verifyDomainForTest(ctx.app, project, 'outbox.test', dns);
    const res = await ctx.app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: { to: ['o1@example.org', 'o2@example.org'], from: 'hi@outbox.test', subject: 'File {{ email }}', body: '<p>Hello</p>' },
    });
    expect(res.status).toBe(200);
    for (const e of res.body.data.emails) await waitForEmailStatus(ctx.app, project.secretKey, e.id, ['SENT']);
    const dir = ctx.app.config.mailOutboxDir;
    const files = readdirSync(dir).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(2);
    const subjects: string[] = [];
    for (const file of files) {
      const raw = readFileSync(join(dir, file));
      const parsed = await simpleParser(raw);
      subjects.push(parsed.subject ?? '');
      expect(parsed.text).toContain('Hello');
      expect((await verifyDkim(raw, dns))[0].status.result).toBe('pass');
    }
    expect(subjects.sort()).toEqual(['File o1@example.org', 'File o2@example.org']);
  });
});
