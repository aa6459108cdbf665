import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { simpleParser } from 'mailparser';
import { DataSource } from 'typeorm';
import { ContactsService } from '../src/contacts/contacts.service';
import { DeliveryRecovery } from '../src/delivery/delivery-recovery';
import { Email, EmailSource } from '../src/sending/email.entity';
import { EmailsService } from '../src/sending/emails.service';
import { QUEUES } from '../src/queue/queue.constants';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { verifyDomainForTest } from './support/domains';
import {
  insertEmailsWithoutJobs,
  SendingTest,
  startSendingTest,
  verifyDkim,
  waitForEmailStatus,
} from './support/sending';
import { setupTestApp } from './support/test-app';
import { AppMetrics, METRICS_REGISTRY } from '../src/common/metrics/metrics';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One header of a raw message, unfolded (mailparser folds the List-* headers into one object). */
function rawHeader(raw: Buffer, name: string): string | null {
  const head = raw
    .toString('utf8')
    .split(/\r?\n\r?\n/)[0]
    .replace(/\r?\n[ \t]+/g, ' ');
  const line = head
    .split(/\r?\n/)
    .find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line ? line.slice(name.length + 1).trim() : null;
}

describe('Delivery: retries, bounces, suppression, idempotency, unsubscribe', () => {
  let t: SendingTest;

  const insertWithoutJobs = (to: string, sources: EmailSource[]): Promise<Email[]> =>
    insertEmailsWithoutJobs(t, to, sources);

  beforeAll(async () => {
    t = await startSendingTest('Delivery', { DELIVERY_BACKOFF_MS: '100', DELIVERY_ATTEMPTS: '4' });
  });

  afterAll(async () => t?.close());

  beforeEach(() => t.smtp.reset());

  // 450 and 452: transient failures that are not deferrals (421, 451 and 4.7.x are paced instead: delivery-pacing.e2e-spec).
  it('retries a 450 with backoff and delivers once: SENT after 3 attempts', async () => {
    const transient = async () =>
      (await t.app.app.get<AppMetrics>(METRICS_REGISTRY).smtpErrors.get()).values.find(
        (v) => v.labels.class === 'transient',
      )?.value ?? 0;
    const transientBefore = await transient();
    t.smtp.fail({ stage: 'RCPT', code: 450, recipient: 'slow@example.org', times: 2 });
    const res = await t.send({
      to: 'slow@example.org',
      from: 'hello@acme.test',
      subject: 'Retry',
      body: '<p>x</p>',
    });
    expect(res.status).toBe(200);
    const record = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      res.body.data.emails[0].id,
      ['SENT', 'FAILED'],
    );
    expect(record.status).toBe('SENT');
    expect(record.attempts).toBe(3);
    expect(record.error).toBeNull();
    expect(t.smtp.refusals).toEqual(['450 RCPT slow@example.org', '450 RCPT slow@example.org']);
    expect(t.smtp.messagesTo('slow@example.org')).toHaveLength(1);
    // GET /metrics' mailwright_smtp_errors_total{class="transient"}: one per retried attempt.
    expect((await transient()) - transientBefore).toBe(2);
  });

  it('marks FAILED when transient failures outlast the attempts, and records email.failed', async () => {
    t.smtp.fail({ stage: 'DATA', code: 452, recipient: 'down@example.org' });
    const res = await t.send({
      to: 'down@example.org',
      from: 'hello@acme.test',
      subject: 'Never',
      body: '<p>x</p>',
    });
    const record = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      res.body.data.emails[0].id,
      ['FAILED', 'SENT'],
    );
    expect(record.status).toBe('FAILED');
    expect(record.attempts).toBe(4);
    expect(record.error).toContain('452');
    expect(t.smtp.messagesTo('down@example.org')).toHaveLength(0);
    const events = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${record.contactId}`,
      key: t.project.secretKey,
    });
    expect(events.body.data.items.map((e: { name: string }) => e.name)).toContain('email.failed');
  });

  it('a 550 bounces: BOUNCED, contact suppressed and unsubscribed, later sends SUPPRESSED and never transmitted', async () => {
    t.smtp.fail({
      stage: 'RCPT',
      code: 550,
      recipient: 'gone@example.org',
      message: 'No such user',
    });
    const res = await t.send({
      to: 'gone@example.org',
      from: 'hello@acme.test',
      subject: 'Bounce',
      body: '<p>x</p>',
      subscribed: true,
    });
    const record = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      res.body.data.emails[0].id,
      ['BOUNCED', 'SENT', 'FAILED'],
    );
    expect(record.status).toBe('BOUNCED');
    expect(record.attempts).toBe(1);
    expect(record.bouncedAt).not.toBeNull();
    expect(record.error).toContain('550');
    const bounced = await t.contact(record.contactId);
    expect(bounced).toMatchObject({ suppressed: true, subscribed: false });
    const events = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${record.contactId}`,
      key: t.project.secretKey,
    });
    expect(events.body.data.items.map((e: { name: string }) => e.name)).toContain('email.bounced');

    t.smtp.clearRules();
    const again = await t.send({
      to: 'gone@example.org',
      from: 'hello@acme.test',
      subject: 'Again',
      body: '<p>x</p>',
    });
    expect(again.status).toBe(200);
    expect(again.body.data.emails[0].status).toBe('SUPPRESSED');
    const later = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      again.body.data.emails[0].id,
      ['SUPPRESSED'],
    );
    expect(later.attempts).toBe(0);
    // Fixed on purpose: asserts that no attempt follows.
    await sleep(500);
    expect(t.smtp.messagesTo('gone@example.org')).toHaveLength(0);
    expect(t.smtp.refusals).toEqual(['550 RCPT gone@example.org']);
  });

  it('Idempotency-Key: same body replays the first response with one email; another body is 409', async () => {
    const body = {
      to: 'idem@example.org',
      from: 'hello@acme.test',
      subject: 'Once',
      body: '<p>x</p>',
    };
    const headers = { 'idempotency-key': 'order-1001' };
    const first = await t.send(body, headers);
    expect(first.status).toBe(200);
    // Same request with keys in another order: the same request.
    const replay = await t.send(
      { body: body.body, subject: body.subject, from: body.from, to: body.to },
      headers,
    );
    expect(replay.status).toBe(200);
    // Byte for byte: same keys in the same order, same timestamp and ids.
    expect(replay.raw).toBe(first.raw);
    const changed = await t.send({ ...body, subject: 'Twice' }, headers);
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    await t.smtp.waitForMessages(1);
    // Fixed on purpose: asserts that no second copy follows.
    await sleep(300);
    expect(t.smtp.messagesTo('idem@example.org')).toHaveLength(1);
    const list = await t.app.request({
      method: 'GET',
      url: `/emails?contactId=${first.body.data.contact}`,
      key: t.project.secretKey,
    });
    expect(list.body.data.total).toBe(1);

    for (const key of ['x'.repeat(256), '', 'caf\u00e9']) {
      const bad = await t.send(body, { 'idempotency-key': key });
      expect(bad.status).toBe(400);
      expect(bad.body.error.errors[0].field).toBe('Idempotency-Key');
    }
  });

  it('Idempotency-Key: keys are per project and expire after 24 hours', async () => {
    const body = {
      to: 'expiry@example.org',
      from: 'hello@acme.test',
      subject: 'Day one',
      body: '<p>x</p>',
    };
    const headers = { 'idempotency-key': 'daily-digest' };
    const first = await t.send(body, headers);
    expect(first.status).toBe(200);

    // Another project may use the same key for its own, different request.
    const other = await t.app.createProject('Idempotency other');
    await verifyDomainForTest(t.app, other, 'other.test', t.dns);
    const foreign = await t.app.request({
      method: 'POST',
      url: '/v1/send',
      key: other.secretKey,
      body: { ...body, from: 'hello@other.test', subject: 'Other project' },
      headers,
    });
    expect(foreign.status).toBe(200);
    expect(foreign.body.data.emails[0].id).not.toBe(first.body.data.emails[0].id);

    const dataSource = t.app.app.get(DataSource);
    await dataSource.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE project_id = $1 AND key = $2`,
      [t.project.id, 'daily-digest'],
    );
    // Past 24 h the key is free again: a different body is new work, not a 409.
    const dayTwo = await t.send({ ...body, subject: 'Day two' }, headers);
    expect(dayTwo.status).toBe(200);
    expect(dayTwo.body.data.emails[0].id).not.toBe(first.body.data.emails[0].id);
    expect((await t.send({ ...body, subject: 'Day two' }, headers)).raw).toBe(dayTwo.raw);

    // The sweep deletes keys past their 24 hours and leaves live ones.
    await dataSource.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE project_id = $1 AND key = $2`,
      [t.project.id, 'daily-digest'],
    );
    const live = await t.send({ ...body, subject: 'Live' }, { 'idempotency-key': 'still-live' });
    expect(live.status).toBe(200);
    await t.app.app.get(DeliveryRecovery).recover();
    const keys = await dataSource.query(
      'SELECT key FROM idempotency_keys WHERE project_id = $1 ORDER BY key',
      [t.project.id],
    );
    expect(keys.map((k: { key: string }) => k.key)).not.toContain('daily-digest');
    expect(keys.map((k: { key: string }) => k.key)).toContain('still-live');
    await t.smtp.waitForMessages(4);
  });

  it('Idempotency-Key: concurrent duplicates do the work once and all get the same answer', async () => {
    const body = {
      to: ['race1@example.org', 'race2@example.org'],
      from: 'hello@acme.test',
      subject: 'Race',
      body: '<p>x</p>',
    };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => t.send(body, { 'idempotency-key': 'race-key' })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    for (const r of results) expect(r.raw).toBe(results[0].raw);
    await t.smtp.waitForMessages(2);
    // Fixed on purpose: asserts that no third message follows.
    await sleep(500);
    expect(t.smtp.accepted).toBe(2);
    const list = await t.app.request({
      method: 'GET',
      url: `/emails?contactId=${results[0].body.data.contact}`,
      key: t.project.secretKey,
    });
    expect(list.body.data.total).toBe(1);
  });

  it('recovers QUEUED emails whose job was never added (crash between commit and enqueue)', async () => {
    const [email] = await insertWithoutJobs('orphan@example.org', [EmailSource.TRANSACTIONAL]);
    // The process "died" before enqueue: nothing is delivered until the sweep finds the row (a
    // fixed wait on purpose: it asserts that nothing happens).
    await sleep(300);
    expect(t.smtp.accepted).toBe(0);
    expect((await t.app.app.get(DeliveryRecovery).recover(0)).found).toBeGreaterThanOrEqual(1);
    const record = await waitForEmailStatus(t.app, t.project.secretKey, email.id, ['SENT']);
    expect(record.attempts).toBe(1);
    expect(t.smtp.messagesTo('orphan@example.org')).toHaveLength(1);
    // Sweeping again re-adds nothing that is not QUEUED.
    await t.app.app.get(DeliveryRecovery).recover(0);
    // Fixed on purpose: asserts that no second delivery follows.
    await sleep(300);
    expect(t.smtp.messagesTo('orphan@example.org')).toHaveLength(1);
  });

  it('one job per email with the email id as job id, transactional before workflow before campaign', async () => {
    const emails = t.app.app.get(EmailsService);
    const composed = await insertWithoutJobs('priority@example.org', [
      EmailSource.CAMPAIGN,
      EmailSource.WORKFLOW,
      EmailSource.TRANSACTIONAL,
    ]);
    await emails.enqueue(composed);
    await emails.enqueue(composed); // a second enqueue of the same rows adds nothing
    const queue = t.app.app.get<Queue>(getQueueToken(QUEUES.DELIVERY));
    const jobs = await Promise.all(composed.map((e) => queue.getJob(e.id)));
    expect(jobs.map((j) => j?.id)).toEqual(composed.map((e) => e.id));
    expect(jobs.map((j) => j?.data)).toEqual(composed.map((e) => ({ emailId: e.id })));
    const [campaign, workflow, transactional] = jobs.map((j) => j!.opts.priority!);
    // BullMQ runs lower numbers first.
    expect(transactional).toBeLessThan(workflow);
    expect(workflow).toBeLessThan(campaign);
    for (const e of composed) await waitForEmailStatus(t.app, t.project.secretKey, e.id, ['SENT']);
    expect(t.smtp.messagesTo('priority@example.org')).toHaveLength(3);
  });

  it('suppress and unsubscribe go through ContactsService and report whether anything changed', async () => {
    const contacts = t.app.app.get(ContactsService);
    const dataSource = t.app.app.get(DataSource);
    const created = await t.app.request({
      method: 'POST',
      url: '/contacts',
      key: t.project.secretKey,
      body: { email: 'states@example.org' },
    });
    const id = created.body.data.id;
    const cause = { emailId: null, data: { source: 'test' } };

    const first = await dataSource.transaction((m) =>
      contacts.unsubscribe(m, t.project.id, id, cause),
    );
    expect(first).toMatchObject({ changed: true, contact: { id, subscribed: false } });
    expect(first.event).toMatchObject({
      name: 'contact.unsubscribed',
      contactId: id,
      data: { source: 'test' },
    });
    const second = await dataSource.transaction((m) =>
      contacts.unsubscribe(m, t.project.id, id, cause),
    );
    expect(second).toMatchObject({
      changed: false,
      event: null,
      contact: { id, subscribed: false },
    });

    expect(await dataSource.transaction((m) => contacts.suppress(m, t.project.id, id))).toBe(true);
    expect(await dataSource.transaction((m) => contacts.suppress(m, t.project.id, id))).toBe(false);
    expect(await t.contact(id)).toMatchObject({ suppressed: true, subscribed: false });

    // Another project's contact is untouched and reads as missing.
    const other = await t.app.createProject('States other');
    const foreign = await dataSource.transaction((m) =>
      contacts.unsubscribe(m, other.id, id, cause),
    );
    expect(foreign).toEqual({ contact: null, changed: false, event: null });
    expect(await dataSource.transaction((m) => contacts.suppress(m, other.id, id))).toBe(false);
    const events = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${id}&name=contact.unsubscribed`,
      key: t.project.secretKey,
    });
    expect(events.body.data.total).toBe(1);
  });

  it('marketing mail: List-Unsubscribe one-click link unsubscribes; tampered token is 404; unsubscribed contacts get no more', async () => {
    const template = await t.createTemplate({
      name: 'Newsletter',
      subject: 'News for {{ email }}',
      body: '<p>News</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      type: 'MARKETING',
      from: 'news@acme.test',
    });
    expect(template.status).toBe(201);
    const res = await t.send({
      to: 'reader@example.org',
      template: template.body.data.id,
      subscribed: true,
    });
    expect(res.status).toBe(200);
    await t.smtp.waitForMessages(1);
    const message = t.smtp.messages[0].parsed!;
    const raw = t.smtp.messages[0].raw;
    const listUnsubscribe = rawHeader(raw, 'List-Unsubscribe');
    // The HTTPS link, then the mailto: on the return path's domain (contract "Unsubscribe by mail").
    const parts =
      /^<(https:\/\/mail\.example\.test\/unsubscribe\/[A-Za-z0-9_-]+)>, <mailto:u-[a-z0-9]{53}@([^>]+)>$/.exec(
        listUnsubscribe ?? '',
      );
    expect(parts).not.toBeNull();
    expect(t.smtp.messages[0].from.split('@')[1]).toBe(parts![2]);
    expect(rawHeader(raw, 'List-Unsubscribe-Post')).toBe('List-Unsubscribe=One-Click');
    const url = parts![1];
    // The link in the body is the same signed link, and DKIM covers both headers.
    expect(message.html).toContain(`href="${url}"`);
    const dkim = await verifyDkim(raw, t.dns);
    expect(dkim[0].status.result).toBe('pass');
    const signed = /\bh=([^;]+)/
      .exec(rawHeader(raw, 'DKIM-Signature') ?? '')![1]
      .replace(/\s+/g, '')
      .toLowerCase()
      .split(':');
    expect(signed).toEqual(
      expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post', 'from', 'subject']),
    );

    const path = new URL(url).pathname;
    /** What RFC 8058 clients send: a form POST with List-Unsubscribe=One-Click, no key. */
    const oneClickPost = (target: string) =>
      t.app.request({
        method: 'POST',
        url: target,
        body: 'List-Unsubscribe=One-Click',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const token = path.split('/').pop()!;
    const tampered =
      path.slice(0, -5) + (token.slice(-5, -4) === 'A' ? 'B' : 'A') + token.slice(-4);
    const forged = await oneClickPost(tampered);
    expect(forged.status).toBe(404);
    expect((await t.contact(res.body.data.contact)).subscribed).toBe(true);
    expect((await t.app.request({ method: 'GET', url: tampered })).status).toBe(404);

    const page = await t.app.request({ method: 'GET', url: path });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.raw).toContain('reader@example.org');
    expect((await t.contact(res.body.data.contact)).subscribed).toBe(true);

    const oneClick = await oneClickPost(path);
    expect(oneClick.status).toBe(200);
    expect((await t.contact(res.body.data.contact)).subscribed).toBe(false);
    // A second click (or a mail client retrying the POST) changes nothing and records nothing.
    const again2 = await oneClickPost(path);
    expect(again2.status).toBe(200);
    const events = await t.app.request({
      method: 'GET',
      url: `/events?contactId=${res.body.data.contact}&name=contact.unsubscribed`,
      key: t.project.secretKey,
    });
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0]).toMatchObject({
      emailId: res.body.data.emails[0].id,
      data: { source: 'unsubscribe-link', emailId: res.body.data.emails[0].id },
    });
    const confirmed = await t.app.request({ method: 'GET', url: path });
    expect(confirmed.raw).toContain('does not receive marketing email');

    t.smtp.reset();
    const again = await t.send({ to: 'reader@example.org', template: template.body.data.id });
    expect(again.body.data.emails[0].status).toBe('SUPPRESSED');
    // Transactional mail still reaches an unsubscribed contact.
    const receipt = await t.send({
      to: 'reader@example.org',
      from: 'hello@acme.test',
      subject: 'Receipt',
      body: '<p>r</p>',
    });
    expect(receipt.body.data.emails[0].status).toBe('QUEUED');
    await t.smtp.waitForMessages(1);
    // Fixed on purpose: asserts that the marketing mail does not follow.
    await sleep(300);
    expect(t.smtp.messages.map((m) => m.parsed!.subject)).toEqual(['Receipt']);

    // An erased contact's link is a 404 page, for the confirmation and the one-click POST alike.
    await t.app.request({
      method: 'DELETE',
      url: `/contacts/${res.body.data.contact}`,
      key: t.project.secretKey,
    });
    expect((await t.app.request({ method: 'GET', url: path })).status).toBe(404);
    const erased = await oneClickPost(path);
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
      body: {
        to: ['o1@example.org', 'o2@example.org'],
        from: 'hi@outbox.test',
        subject: 'File {{ email }}',
        body: '<p>Hello</p>',
      },
    });
    expect(res.status).toBe(200);
    for (const e of res.body.data.emails)
      await waitForEmailStatus(ctx.app, project.secretKey, e.id, ['SENT']);
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
