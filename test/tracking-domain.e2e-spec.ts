import { getQueueToken } from '@nestjs/bullmq';
import { Queue, QueueEvents } from 'bullmq';
import { DataSource } from 'typeorm';
import { ContactsService } from '../src/contacts/contacts.service';
import { DOMAIN_CHECK_SCHEDULE, DomainCheckSchedule } from '../src/domains/domains.constants';
import { DOMAIN_JOBS } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { redisConnectionOptions } from '../src/queue/redis';
import { EmailSource } from '../src/sending/email.entity';
import { EmailsService } from '../src/sending/emails.service';
import { verifyDomainForTest } from './support/domains';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';
import { TestProject } from './support/test-app';
import { linksOf } from './support/links';

/**
 * A project's tracking domain (contract "Tracking domain"), against the
 * loopback DNS server: PENDING until its CNAME to the service's host is
 * published, then the pixel, click and unsubscribe links of new mail use it;
 * the service answers those links on that host for valid tokens only; the
 * sweep verifies a pending one; clearing or changing it goes back to
 * PUBLIC_URL; another project gets nothing from it.
 */
const PUBLIC = 'https://mail.example.test';
const TARGET = 'mail.example.test';
const HOST = 'links.acme.test';
const SHOP = 'https://shop.example/item?id=1';
const BODY = `<p>Hi <a href="${SHOP}">Item</a> <a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>`;

/** `<origin>/t/o/…`, `<origin>/t/c/…` and `<origin>/unsubscribe/…` with the header's HTTPS link on the same origin. */
function expectLinksOn(
  message: { html: string; listUnsubscribe: string },
  origin: string,
  unsubscribeOrigin = origin,
): void {
  const links = linksOf(message.html);
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  expect(links.images).toEqual([
    expect.stringMatching(new RegExp(`^${escape(origin)}/t/o/[\\w-]+$`)),
  ]);
  expect(links.hrefs).toEqual([
    expect.stringMatching(new RegExp(`^${escape(origin)}/t/c/[\\w-]+$`)),
    expect.stringMatching(new RegExp(`^${escape(unsubscribeOrigin)}/unsubscribe/[\\w-]+$`)),
  ]);
  // The HTTPS link, then the mailto: of unsubscribe by mail (on the return-path domain, not the tracking one).
  expect(message.listUnsubscribe).toMatch(
    new RegExp(`^<${escape(links.hrefs[1])}>, <mailto:u-[0-9a-f]+@[^>]+>$`),
  );
}

describe('Tracking domain (e2e, DNS from a loopback test server)', () => {
  let t: SendingTest;
  let other: TestProject;
  let templateId: string;
  let queue: Queue;
  let queueEvents: QueueEvents;

  const patch = (body: unknown, key = t.project.secretKey) =>
    t.app.request({ method: 'PATCH', url: '/project', key, body });
  const verify = (key = t.project.secretKey) =>
    t.app.request({ method: 'POST', url: '/project/tracking-domain/verify', key });
  const project = async (key = t.project.secretKey) =>
    (await t.app.request({ method: 'GET', url: '/project', key })).body.data;
  const ask = (domain: string) =>
    t.app.request({
      method: 'GET',
      url: `/tracking-domains/check?domain=${encodeURIComponent(domain)}`,
    });
  const onHost = (method: 'GET' | 'POST', url: string, host = HOST) =>
    t.app.request({ method, url: new URL(url).pathname, headers: { host } });

  /** Sends the marketing template to `to` and answers the message the SMTP server received. */
  async function sendAndReceive(to: string, key = t.project.secretKey, template = templateId) {
    const before = t.smtp.messagesTo(to).length;
    const res = await t.app.request({
      method: 'POST',
      url: '/v1/send',
      key,
      body: { to, subscribed: true, template },
    });
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].id as string;
    await waitForEmailStatus(t.app, key, emailId, ['SENT']);
    return received(to, before);
  }

  async function received(to: string, before: number) {
    const deadline = Date.now() + 20_000;
    while (t.smtp.messagesTo(to).length <= before && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const message = t.smtp.messagesTo(to)[before];
    const raw = message.raw.toString('utf8');
    // The header as written on the wire (unfolded), not mailparser's reading of it.
    const headers = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
    return {
      html: String(message.parsed!.html),
      listUnsubscribe: /^List-Unsubscribe: (.*)$/im.exec(headers)?.[1] ?? '',
      raw,
    };
  }

  /** Runs the domains queue's repeating job now, through the queue, as the scheduler would. */
  async function runSweep(): Promise<{ checked: number; verified: number; failed: number }> {
    const job = await queue.add(DOMAIN_JOBS.SWEEP, {});
    return job.waitUntilFinished(queueEvents, 20_000);
  }

  beforeAll(async () => {
    t = await startSendingTest('Tracking domain');
    other = await t.app.createProject('Other');
    await verifyDomainForTest(t.app, other, 'other.test', t.dns);
    const template = await t.createTemplate({
      name: 'News',
      subject: 'News',
      body: BODY,
      type: 'MARKETING',
      from: 'news@acme.test',
    });
    expect(template.status).toBe(201);
    templateId = template.body.data.id;
    queue = t.app.app.get<Queue>(getQueueToken(QUEUES.DOMAINS));
    queueEvents = new QueueEvents(QUEUES.DOMAINS, {
      connection: redisConnectionOptions(t.app.config.redisUrl),
      prefix: t.prefix,
    });
    await queueEvents.waitUntilReady();
  });

  afterAll(async () => {
    await queueEvents?.close();
    await t?.close();
  });

  it('refuses names that are not public host names with 422 and the envelope', async () => {
    for (const bad of [
      'localhost',
      'corp.internal',
      'svc.cluster.local',
      '10.0.0.1',
      '[::1]',
      'https://links.acme.test',
      'links.acme.test:443',
      'links.acme.test/t',
      'links.acme.test.',
      'co.uk',
      '-bad-.acme.test',
      '',
      'a'.repeat(250) + '.test',
    ]) {
      const res = await patch({ trackingDomain: bad });
      expect({ bad, status: res.status }).toEqual({ bad, status: 422 });
      expect(res.body).toMatchObject({
        success: false,
        error: {
          code: 'VALIDATION_ERROR',
          errors: [expect.objectContaining({ field: 'trackingDomain' })],
        },
      });
    }
    const wrongType = await patch({ trackingDomain: 42 });
    expect(wrongType.status).toBe(422);
    expect(wrongType.body.error.errors[0].field).toBe('trackingDomain');
    expect((await project()).trackingDomain).toBeNull();
  });

  it('is PENDING until the CNAME exists, then VERIFIED; new mail uses it, mail composed before keeps its unsubscribe link', async () => {
    const set = await patch({ trackingDomain: 'Links.ACME.test' });
    expect(set.status).toBe(200);
    expect(set.body.data.trackingDomain).toEqual({
      domain: HOST,
      status: 'PENDING',
      record: { type: 'CNAME', name: HOST, value: TARGET, status: 'PENDING' },
    });

    const absent = await verify();
    expect(absent.status).toBe(200);
    expect(absent.body.data.trackingDomain).toMatchObject({
      status: 'PENDING',
      record: { status: 'PENDING', error: 'NXDOMAIN' },
    });
    t.dns.setCname(HOST, 'elsewhere.example.net');
    const wrong = await verify();
    expect(wrong.body.data.trackingDomain).toMatchObject({
      status: 'PENDING',
      record: { status: 'FAILED', error: 'MISMATCH', found: ['elsewhere.example.net'] },
    });
    expect((await ask(HOST)).status).toBe(404);

    // Not verified: new mail still links to PUBLIC_URL.
    expectLinksOn(await sendAndReceive('pending@example.org'), PUBLIC);

    // Composed (and stored rendered) while pending, delivered after the verification.
    const emails = t.app.app.get(EmailsService);
    const early = await t.app.app.get(DataSource).transaction(async (manager) => {
      const { contact } = await t.app.app
        .get(ContactsService)
        .upsertByEmail(manager, t.project.id, 'early@example.org', { defaultSubscribed: true });
      const row = await emails.compose({
        projectId: t.project.id,
        contact,
        source: EmailSource.TRANSACTIONAL,
        marketing: true,
        from: { email: 'news@acme.test' },
        content: { subject: 'Early', body: BODY },
      });
      await emails.insert(manager, [row]);
      return row;
    });

    t.dns.setCname(HOST, `${TARGET}.`);
    const verified = await verify();
    expect(verified.body.data.trackingDomain).toEqual({
      domain: HOST,
      status: 'VERIFIED',
      record: { type: 'CNAME', name: HOST, value: TARGET, status: 'VERIFIED' },
    });
    expect(await project()).toMatchObject({ trackingDomain: { status: 'VERIFIED' } });

    const fresh = await sendAndReceive('fresh@example.org');
    expectLinksOn(fresh, `https://${HOST}`);
    expect(fresh.raw).not.toContain(PUBLIC);

    // Decided at delivery (pixel, clicks) and at compose (a stored message's unsubscribe link): both hosts work.
    const before = t.smtp.messagesTo('early@example.org').length;
    await emails.enqueue([early]);
    await waitForEmailStatus(t.app, t.project.secretKey, early.id, ['SENT']);
    expectLinksOn(await received('early@example.org', before), `https://${HOST}`, PUBLIC);
  });

  it('campaign mail, rendered at delivery, has all its links on the tracking domain', async () => {
    const to = 'campaign@example.org';
    const contact = await t.app.request({
      method: 'POST',
      url: '/contacts',
      key: t.project.secretKey,
      body: { email: to, subscribed: true },
    });
    expect(contact.status).toBe(201);
    const created = await t.app.request({
      method: 'POST',
      url: '/campaigns',
      key: t.project.secretKey,
      body: {
        name: 'Links',
        subject: 'Links',
        body: BODY,
        from: 'news@acme.test',
        audienceType: 'FILTERED',
        audienceFilter: {
          logic: 'AND',
          conditions: [{ field: 'email', operator: 'equals', value: to }],
        },
      },
    });
    expect(created.status).toBe(201);
    const started = await t.app.request({
      method: 'POST',
      url: `/campaigns/${created.body.data.id}/send`,
      key: t.project.secretKey,
      body: {},
    });
    expect(started.status).toBeLessThan(300);
    const message = await received(to, 0);
    expectLinksOn(message, `https://${HOST}`);
    expect(message.raw).not.toContain(PUBLIC);
  });

  it('answers pixel, click and unsubscribe on the tracking host for valid tokens only (a forged token is 404)', async () => {
    const message = await sendAndReceive('host@example.org');
    const links = linksOf(message.html);
    expect((await onHost('GET', links.images[0])).status).toBe(200);
    const click = await onHost('GET', links.hrefs[0]);
    expect(click.status).toBe(302);
    expect(click.headers.location).toBe(SHOP);
    expect((await onHost('GET', links.hrefs[1])).status).toBe(200);

    const alter = (url: string) => {
      const token = url.split('/').pop()!;
      const flipped = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
      return url.replace(token, flipped);
    };
    expect((await onHost('GET', alter(links.images[0]))).status).toBe(404);
    expect((await onHost('GET', alter(links.hrefs[0]))).status).toBe(404);
    expect((await onHost('GET', alter(links.hrefs[1]))).status).toBe(404);
    expect((await onHost('POST', alter(links.hrefs[1]))).status).toBe(404);
    expect((await onHost('GET', `https://${HOST}/t/c/forged`)).status).toBe(404);
    // The same links on any other host name work as well: the token decides, never the host.
    expect((await onHost('GET', links.hrefs[0], 'anything.example')).status).toBe(302);
    expect((await onHost('POST', links.hrefs[1])).status).toBe(200);
    const contact = await t.app.request({
      method: 'GET',
      url: '/contacts?email=host%40example.org',
      key: t.project.secretKey,
    });
    expect(contact.body.data.items[0].subscribed).toBe(false);
  });

  it("answers a TLS proxy's ask for verified tracking domains only", async () => {
    expect((await ask(HOST)).status).toBe(200);
    expect((await ask(HOST)).body.data).toEqual({ domain: HOST });
    expect((await ask('LINKS.acme.test')).status).toBe(200);
    for (const name of ['unknown.acme.test', TARGET, 'acme.test', 'localhost', 'x/y'])
      expect({ name, status: (await ask(name)).status }).toEqual({ name, status: 404 });
    const missing = await t.app.request({ method: 'GET', url: '/tracking-domains/check' });
    expect(missing.status).toBe(400);
    expect(missing.body.success).toBe(false);
  });

  it("another project's verified domain grants nothing: 409 on PATCH, and its own mail stays on PUBLIC_URL", async () => {
    const taken = await patch({ trackingDomain: HOST }, other.secretKey);
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('CONFLICT');
    expect((await project(other.secretKey)).trackingDomain).toBeNull();
    const template = await t.app.request({
      method: 'POST',
      url: '/templates',
      key: other.secretKey,
      body: { name: 'O', subject: 'O', body: BODY, type: 'MARKETING', from: 'news@other.test' },
    });
    expectLinksOn(
      await sendAndReceive('other@example.org', other.secretKey, template.body.data.id),
      PUBLIC,
    );
  });

  it('the sweep verifies a pending one and fails one whose CNAME is gone; a name another project verified stays unverified for a second one', async () => {
    const sweepHost = 'sweep.other.test';
    expect((await patch({ trackingDomain: sweepHost }, other.secretKey)).status).toBe(200);
    await runSweep();
    expect((await project(other.secretKey)).trackingDomain).toMatchObject({
      status: 'PENDING',
      record: { error: 'NXDOMAIN' },
    });
    t.dns.setCname(sweepHost, TARGET);
    const result = await runSweep();
    expect(result.verified).toBeGreaterThanOrEqual(1);
    expect((await project(other.secretKey)).trackingDomain).toMatchObject({
      domain: sweepHost,
      status: 'VERIFIED',
      record: { status: 'VERIFIED' },
    });

    // Re-checked when due: a CNAME that is gone fails the domain, and new mail leaves it.
    const schedule = t.app.app.get<DomainCheckSchedule>(DOMAIN_CHECK_SCHEDULE);
    const { verifiedEveryMs, pendingWindowMs } = schedule;
    try {
      schedule.verifiedEveryMs = 0;
      t.dns.removeCname(sweepHost);
      expect((await runSweep()).failed).toBeGreaterThanOrEqual(1);
      expect((await project(other.secretKey)).trackingDomain).toMatchObject({
        status: 'FAILED',
        record: { status: 'FAILED', error: 'NXDOMAIN' },
      });
      expect((await ask(sweepHost)).status).toBe(404);
      // A pending one not found within the pending window fails too.
      schedule.pendingWindowMs = 0;
      expect((await patch({ trackingDomain: 'late.other.test' }, other.secretKey)).status).toBe(
        200,
      );
      await runSweep();
      expect((await project(other.secretKey)).trackingDomain).toMatchObject({
        domain: 'late.other.test',
        status: 'FAILED',
      });
    } finally {
      schedule.verifiedEveryMs = verifiedEveryMs;
      schedule.pendingWindowMs = pendingWindowMs;
    }

    // A third project that sets it before the first verification could not win it after.
    const third = await t.app.createProject('Third');
    const raced = await patch({ trackingDomain: 'race.other.test' }, third.secretKey);
    expect(raced.status).toBe(200);
    expect((await patch({ trackingDomain: 'race.other.test' }, other.secretKey)).status).toBe(200);
    t.dns.setCname('race.other.test', TARGET);
    expect((await verify(other.secretKey)).body.data.trackingDomain.status).toBe('VERIFIED');
    expect((await verify(third.secretKey)).body.data.trackingDomain).toMatchObject({
      status: 'PENDING',
      record: { status: 'FAILED', error: 'TAKEN' },
    });
  });

  it("a name outside the project's verified sending domains stays unverified (NOT_OWNED) even with the right CNAME", async () => {
    // Someone else's company pointed this name here; a project that does not own the parent cannot take it.
    const stranger = await t.app.createProject('Stranger');
    t.dns.setCname('links.elsewhere.test', TARGET);
    expect(
      (await patch({ trackingDomain: 'links.elsewhere.test' }, stranger.secretKey)).status,
    ).toBe(200);
    expect((await verify(stranger.secretKey)).body.data.trackingDomain).toMatchObject({
      status: 'PENDING',
      record: { status: 'FAILED', error: 'NOT_OWNED' },
    });
    // Verifying the parent as a sending domain is the proof: then the same CNAME verifies.
    await verifyDomainForTest(t.app, stranger, 'elsewhere.test', t.dns);
    expect((await verify(stranger.secretKey)).body.data.trackingDomain).toMatchObject({
      domain: 'links.elsewhere.test',
      status: 'VERIFIED',
      record: { status: 'VERIFIED' },
    });
  });

  it('changing the domain resets its status; null clears it and new mail goes back to PUBLIC_URL', async () => {
    const changed = await patch({ trackingDomain: 'track.acme.test' });
    expect(changed.body.data.trackingDomain).toEqual({
      domain: 'track.acme.test',
      status: 'PENDING',
      record: { type: 'CNAME', name: 'track.acme.test', value: TARGET, status: 'PENDING' },
    });
    expect((await ask(HOST)).status).toBe(404);
    expectLinksOn(await sendAndReceive('changed@example.org'), PUBLIC);

    // Back to the verified name: it has to be verified again.
    expect((await patch({ trackingDomain: HOST })).body.data.trackingDomain.status).toBe('PENDING');
    expect((await verify()).body.data.trackingDomain.status).toBe('VERIFIED');
    expectLinksOn(await sendAndReceive('again@example.org'), `https://${HOST}`);

    const cleared = await patch({ trackingDomain: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.trackingDomain).toBeNull();
    expect((await project()).trackingDomain).toBeNull();
    expect((await ask(HOST)).status).toBe(404);
    expectLinksOn(await sendAndReceive('cleared@example.org'), PUBLIC);
    const none = await verify();
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('TRACKING_DOMAIN_NOT_FOUND');
  });
});

describe('Tracking domain on an http:// PUBLIC_URL, with TRACKING_CNAME_TARGET', () => {
  let t: SendingTest;

  beforeAll(async () => {
    t = await startSendingTest('Tracking domain http', {
      PUBLIC_URL: 'http://mail.example.test',
      TRACKING_CNAME_TARGET: 'Edge.Example.NET',
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('asks for a CNAME to TRACKING_CNAME_TARGET and links with http://', async () => {
    const set = await t.app.request({
      method: 'PATCH',
      url: '/project',
      key: t.project.secretKey,
      body: { trackingDomain: HOST },
    });
    expect(set.body.data.trackingDomain.record.value).toBe('edge.example.net');
    t.dns.setCname(HOST, TARGET);
    const wrong = await t.app.request({
      method: 'POST',
      url: '/project/tracking-domain/verify',
      key: t.project.secretKey,
    });
    expect(wrong.body.data.trackingDomain.record.error).toBe('MISMATCH');
    t.dns.setCname(HOST, 'edge.example.net');
    const verified = await t.app.request({
      method: 'POST',
      url: '/project/tracking-domain/verify',
      key: t.project.secretKey,
    });
    expect(verified.body.data.trackingDomain.status).toBe('VERIFIED');
    const res = await t.send({
      to: 'http@example.org',
      subscribed: true,
      from: 'news@acme.test',
      subject: 'S',
      body: BODY,
      track: true,
    });
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].id as string;
    await waitForEmailStatus(t.app, t.project.secretKey, emailId, ['SENT']);
    await t.smtp.waitForMessages(1);
    const links = linksOf(String(t.smtp.messagesTo('http@example.org')[0].parsed!.html));
    expect(links.images[0]).toMatch(new RegExp(`^http://${HOST}/t/o/`));
    expect(links.hrefs[0]).toMatch(new RegExp(`^http://${HOST}/t/c/`));
    expect(links.hrefs[1]).toMatch(new RegExp(`^http://${HOST}/unsubscribe/`));
  });
});
