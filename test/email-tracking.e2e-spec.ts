import { createHmac } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { parse as parseUuid } from 'uuid';
import { AppMetrics, METRICS_REGISTRY } from '../src/common/metrics/metrics';
import { EmailTrackingService } from '../src/engagement/email-tracking.service';
import { TrackingLinks } from '../src/engagement/tracking-links';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';
import { TcpRelay } from './support/tcp-relay';
import { startTestApp, TestApp, testConfig } from './support/test-app';
import { linksOf } from './support/links';

/**
 * Open and click tracking end to end: the delivered message (parsed from the
 * SMTP server) carries the pixel and tracked links when it should, the
 * endpoints count hits and record one event each, forged tokens are 404 and
 * record nothing, and with the database unreachable the pixel and the
 * redirect are still served (the hits are written later by a worker).
 */
const PUBLIC = 'https://mail.example.test';
const SHOP = 'https://shop.example/item?id=1&ref=x';
const BODY =
  `<html><body><p>Hi <a class="cta" href="https://shop.example/item?id=1&amp;ref=x">Item</a> ` +
  `<a href="mailto:help@acme.test">mail</a> <a href="tel:+15550100">call</a> <a href="#top">top</a> ` +
  `<a href="{{ unsubscribeUrl }}">Unsubscribe</a></p></body></html>`;

describe('open and click tracking (e2e)', () => {
  let t: SendingTest;
  let marketing: {
    emailId: string;
    contactId: string;
    pixel: string;
    click: string;
    html: string;
    text: string;
  };

  const get = (url: string, app: TestApp = t.app) => app.request({ method: 'GET', url });
  const record = async (id: string) =>
    (await t.app.request({ method: 'GET', url: `/emails/${id}`, key: t.project.secretKey })).body
      .data;
  const eventsOf = async (contactId: string, name: string) =>
    (
      await t.app.request({
        method: 'GET',
        url: `/events?contactId=${contactId}&name=${name}&limit=100`,
        key: t.project.secretKey,
      })
    ).body.data.items;
  const flush = () => t.app.app.get(EmailTrackingService).flush();

  async function sendAndReceive(to: string, body: Record<string, unknown>) {
    const before = t.smtp.messagesTo(to).length;
    const res = await t.send({ to, subscribed: true, ...body });
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].id as string;
    await waitForEmailStatus(t.app, t.project.secretKey, emailId, ['SENT']);
    await t.smtp.waitForMessages(t.smtp.messages.length);
    const message = t.smtp.messagesTo(to)[before].parsed!;
    return {
      emailId,
      contactId: res.body.data.contact as string,
      html: String(message.html),
      text: String(message.text),
    };
  }

  beforeAll(async () => {
    t = await startSendingTest('Tracking');
    const template = await t.createTemplate({
      name: 'News',
      subject: 'News',
      body: BODY,
      type: 'MARKETING',
      from: 'news@acme.test',
    });
    expect(template.status).toBe(201);
    const sent = await sendAndReceive('reader@example.org', { template: template.body.data.id });
    const links = linksOf(sent.html);
    marketing = { ...sent, pixel: links.images[0], click: links.hrefs[0] };
  });

  afterAll(async () => {
    await t?.close();
  });

  it('MARKETING mail carries the pixel and tracked http(s) links; mailto/tel/#/unsubscribe and the text part untouched', async () => {
    const links = linksOf(marketing.html);
    expect(links.images).toHaveLength(1);
    expect(links.images[0]).toMatch(new RegExp(`^${PUBLIC}/t/o/[A-Za-z0-9_-]+$`));
    expect(links.hrefs[0]).toMatch(new RegExp(`^${PUBLIC}/t/c/[A-Za-z0-9_-]+$`));
    expect(links.hrefs.slice(1, 4)).toEqual(['mailto:help@acme.test', 'tel:+15550100', '#top']);
    expect(links.hrefs[4]).toMatch(new RegExp(`^${PUBLIC}/unsubscribe/[A-Za-z0-9_-]+$`));
    expect(marketing.html).toContain('class="cta"');
    expect(marketing.text).toContain(SHOP);
    expect(marketing.text).not.toContain('/t/c/');
    expect(await record(marketing.emailId)).toMatchObject({
      trackOpens: true,
      trackClicks: true,
      opens: 0,
      clicks: 0,
      openedAt: null,
    });
    // The stored HTML is the rendered one: tracking is added on the way out only.
    const [row] = await t.app.app
      .get(DataSource)
      .query('SELECT html FROM emails WHERE id = $1', [marketing.emailId]);
    expect(row.html).not.toContain('/t/');
  });

  it('TRANSACTIONAL mail is not tracked unless the send or the template says track: true', async () => {
    const plain = await sendAndReceive('plain@example.org', {
      from: 'hello@acme.test',
      subject: 'Receipt',
      body: BODY,
    });
    expect(linksOf(plain.html).images).toEqual([]);
    expect(linksOf(plain.html).hrefs[0]).toBe(SHOP);
    expect(await record(plain.emailId)).toMatchObject({ trackOpens: false, trackClicks: false });

    const bySend = await sendAndReceive('bysend@example.org', {
      from: 'hello@acme.test',
      subject: 'Receipt',
      body: BODY,
      track: true,
    });
    expect(linksOf(bySend.html).images[0]).toMatch(/\/t\/o\//);
    expect(linksOf(bySend.html).hrefs[0]).toMatch(/\/t\/c\//);

    const template = await t.createTemplate({
      name: 'Receipt',
      subject: 'R',
      body: BODY,
      type: 'TRANSACTIONAL',
      from: 'hello@acme.test',
      track: true,
    });
    expect(template.body.data.track).toBe(true);
    const byTemplate = await sendAndReceive('bytemplate@example.org', {
      template: template.body.data.id,
    });
    expect(linksOf(byTemplate.html).images[0]).toMatch(/\/t\/o\//);
    expect(await record(byTemplate.emailId)).toMatchObject({ trackOpens: true, trackClicks: true });

    expect(
      (
        await t.send({
          to: 'x@example.org',
          from: 'hello@acme.test',
          subject: 's',
          body: 'b',
          track: 'yes',
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await t.createTemplate({
          name: 'T',
          subject: 's',
          body: 'b',
          type: 'TRANSACTIONAL',
          track: null,
        })
      ).status,
    ).toBe(422);
  });

  it('opening twice: a 43-byte uncached GIF, openedAt set once, opens counted, one email.opened event', async () => {
    const path = new URL(marketing.pixel).pathname;
    const first = await get(path);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('image/gif');
    expect(first.headers['cache-control']).toMatch(/no-store/);
    expect(first.headers['content-length']).toBe('43');
    expect(first.raw.startsWith('GIF89a')).toBe(true);
    await flush();
    const afterFirst = await record(marketing.emailId);
    expect(afterFirst.opens).toBe(1);
    expect(afterFirst.openedAt).not.toBeNull();
    expect((await get(path)).status).toBe(200);
    await flush();
    const afterSecond = await record(marketing.emailId);
    expect(afterSecond).toMatchObject({ opens: 2, openedAt: afterFirst.openedAt });
    const events = await eventsOf(marketing.contactId, 'email.opened');
    expect(events).toHaveLength(1);
    // Byte for byte the GIF (it is written as a latin1 string with the headers), with the headers every route has.
    const exact = await t.app.app.inject({ method: 'GET', url: path });
    expect(
      exact.rawPayload.equals(
        Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64'),
      ),
    ).toBe(true);
    expect(exact.headers['x-request-id']).toEqual(expect.any(String));
    expect(exact.headers.vary).toBe('Origin');
    // Fastify's onResponse hooks ran for it: the request is in the latency histogram under its route.
    const histogram = await t.app.app.get<AppMetrics>(METRICS_REGISTRY).httpDuration.get();
    const counted = histogram.values.find(
      (v) =>
        v.metricName?.endsWith('_count') &&
        v.labels.route === '/t/o/:token' &&
        v.labels.status === '200',
    );
    expect(counted?.value).toBeGreaterThanOrEqual(3);
    await flush();
  });

  it('clicking: 302 to exactly the original URL, clicks counted, one email.clicked with data.url', async () => {
    const path = new URL(marketing.click).pathname;
    for (let i = 0; i < 3; i++) {
      const res = await get(path);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(SHOP);
    }
    await flush();
    expect(await record(marketing.emailId)).toMatchObject({ clicks: 3 });
    expect((await record(marketing.emailId)).clickedAt).not.toBeNull();
    const events = await eventsOf(marketing.contactId, 'email.clicked');
    expect(events).toHaveLength(1);
    expect(events[0].data).toEqual({ url: SHOP });
    // A long link (its token is ~2 KB, far past the router's 100-character parameter limit) redirects too.
    const long = `https://shop.example/search?q=${'x'.repeat(1500)}&utm_source=news`;
    const tracked = t.app.app.get(TrackingLinks).clickUrl(marketing.emailId, long)!;
    const res = await get(new URL(tracked).pathname);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(long);
    // Links a template may hold that a header may not: non-Latin-1 text and line breaks. They are
    // encoded as a browser would, never a 500.
    for (const [link, location] of [
      [
        'https://shop.example/caf\u00e9?q=\u65e5\u672c#\u00fc',
        'https://shop.example/caf%C3%A9?q=%E6%97%A5%E6%9C%AC#%C3%BC',
      ],
      ['https://shop.example/a\r\nSet-Cookie: x=1', 'https://shop.example/aSet-Cookie:%20x=1'],
      ['https://b\u00fccher.example/', 'https://xn--bcher-kva.example/'],
    ]) {
      const signed = t.app.app.get(TrackingLinks).clickUrl(marketing.emailId, link)!;
      const hit = await get(new URL(signed).pathname);
      expect({ link, status: hit.status, location: hit.headers.location }).toEqual({
        link,
        status: 302,
        location,
      });
      expect(hit.headers['set-cookie']).toBeUndefined();
    }
    await flush();
  });

  it('opens and clicks of one email in one batch: one statement counts both, each first time set once, one event each', async () => {
    const sent = await sendAndReceive('both@example.org', {
      template: (
        await t.createTemplate({
          name: 'Both',
          subject: 'Both',
          body: BODY,
          type: 'MARKETING',
          from: 'news@acme.test',
        })
      ).body.data.id,
    });
    const links = linksOf(sent.html);
    for (let i = 0; i < 2; i++) {
      expect((await get(new URL(links.images[0]).pathname)).status).toBe(200);
      expect((await get(new URL(links.hrefs[0]).pathname)).status).toBe(302);
    }
    await flush();
    const after = await record(sent.emailId);
    expect(after).toMatchObject({ opens: 2, clicks: 2 });
    expect(after.openedAt).not.toBeNull();
    expect(after.clickedAt).not.toBeNull();
    expect(await eventsOf(sent.contactId, 'email.opened')).toHaveLength(1);
    const clicked = await eventsOf(sent.contactId, 'email.clicked');
    expect(clicked.map((e: { data: unknown }) => e.data)).toEqual([{ url: SHOP }]);

    // Retried RECORD_HIT jobs may repeat an email and kind: their counts add up, times already set stay.
    const tracking = t.app.app.get(EmailTrackingService);
    await tracking.record([
      { emailId: sent.emailId, kind: 'open', count: 1, at: '2030-01-01T00:00:00.000Z' },
      { emailId: sent.emailId, kind: 'open', count: 2, at: '2029-01-01T00:00:00.000Z' },
      {
        emailId: sent.emailId,
        kind: 'click',
        count: 1,
        at: '2029-01-01T00:00:00.000Z',
        url: 'https://elsewhere.example/',
      },
    ]);
    expect(await record(sent.emailId)).toMatchObject({
      opens: 5,
      clicks: 3,
      openedAt: after.openedAt,
      clickedAt: after.clickedAt,
    });
    expect(await eventsOf(sent.contactId, 'email.opened')).toHaveLength(1);
    expect(await eventsOf(sent.contactId, 'email.clicked')).toHaveLength(1);
  });

  it('GET /emails filters by opened and clicked (the per-recipient open and click lists)', async () => {
    const template = (
      await t.createTemplate({
        name: 'Lists',
        subject: 'Lists',
        body: BODY,
        type: 'MARKETING',
        from: 'news@acme.test',
      })
    ).body.data.id;
    const sent: { emailId: string; html: string }[] = [];
    for (const to of ['list-none@example.org', 'list-open@example.org', 'list-click@example.org'])
      sent.push(await sendAndReceive(to, { template }));
    expect((await get(new URL(linksOf(sent[1].html).images[0]).pathname)).status).toBe(200);
    expect((await get(new URL(linksOf(sent[2].html).hrefs[0]).pathname)).status).toBe(302);
    await flush();
    const ids = async (query: string): Promise<string[]> => {
      const res = await t.app.request({
        method: 'GET',
        url: `/emails?${query}&limit=100`,
        key: t.project.secretKey,
      });
      expect(res.status).toBe(200);
      return res.body.data.items.map((e: { id: string }) => e.id);
    };
    const [n, o, c] = sent.map((x) => x.emailId);
    const openedIds = await ids('opened=true');
    expect(openedIds).toContain(o);
    expect(openedIds).not.toContain(n);
    const clickedIds = await ids('clicked=true');
    expect(clickedIds).toContain(c);
    expect(clickedIds).not.toContain(o);
    expect(clickedIds).not.toContain(n);
    const unopened = await ids('opened=false&clicked=false');
    expect(unopened).toContain(n);
    expect(unopened).not.toContain(o);
    expect(unopened).not.toContain(c);
    expect(await ids('opened=true&clicked=true')).not.toContain(o);
    const bad = await t.app.request({
      method: 'GET',
      url: '/emails?opened=maybe',
      key: t.project.secretKey,
    });
    expect(bad.status).toBe(400);
  });

  it('a forged or altered token is 404 and records nothing; another URL cannot be signed without the secret', async () => {
    const before = await record(marketing.emailId);
    const alter = (url: string) => {
      const path = new URL(url).pathname;
      const i = path.length - 10;
      return path.slice(0, i) + (path[i] === 'A' ? 'B' : 'A') + path.slice(i + 1);
    };
    expect((await get(alter(marketing.pixel))).status).toBe(404);
    expect((await get(alter(marketing.click))).status).toBe(404);
    expect((await get('/t/o/forged')).status).toBe(404);
    expect((await get('/t/c/forged')).status).toBe(404);
    // A token naming another URL, signed with the APP_SECRET itself instead of the derived key: refused.
    const payload = Buffer.concat([
      Buffer.from([1]),
      Buffer.from(parseUuid(marketing.emailId)),
      Buffer.from('https://evil.example/'),
    ]);
    const mac = createHmac('sha256', t.app.config.appSecret)
      .update(payload)
      .digest()
      .subarray(0, 16);
    const forged = await get(`/t/c/${Buffer.concat([payload, mac]).toString('base64url')}`);
    expect(forged.status).toBe(404);
    expect(forged.headers.location).toBeUndefined();
    // An open token is no click token.
    expect((await get(`/t/c/${new URL(marketing.pixel).pathname.split('/').pop()}`)).status).toBe(
      404,
    );
    await flush();
    const after = await record(marketing.emailId);
    expect(after).toMatchObject({
      opens: before.opens,
      clicks: before.clicks,
      openedAt: before.openedAt,
      clickedAt: before.clickedAt,
    });
    expect(await eventsOf(marketing.contactId, 'email.opened')).toHaveLength(1);
    expect(await eventsOf(marketing.contactId, 'email.clicked')).toHaveLength(1);
  });

  it('with its database unreachable an API process still serves the pixel (200) and the redirect (302); a worker records the hits later', async () => {
    const url = new URL(t.db.url);
    const relay = new TcpRelay(url.hostname, Number(url.port || 5432));
    await relay.open();
    url.port = String(relay.port);
    const api = await startTestApp(
      testConfig(url.toString(), t.prefix, { APP_ROLE: 'api', PUBLIC_URL: PUBLIC }),
    );
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      const before = await record(marketing.emailId);
      await relay.cut();
      const started = Date.now();
      const pixel = await get(new URL(marketing.pixel).pathname, api);
      const click = await get(new URL(marketing.click).pathname, api);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(pixel.status).toBe(200);
      expect(pixel.headers['content-type']).toBe('image/gif');
      expect(click.status).toBe(302);
      expect(click.headers.location).toBe(SHOP);
      await api.app.get(EmailTrackingService).flush();
      expect(
        warn.mock.calls.some(
          (c) =>
            String(c[c.length - 1]).includes('queued for later') ||
            JSON.stringify(c).includes('queued for later'),
        ),
      ).toBe(true);
      // The worker of the main app (same queues) writes them once the record-hit jobs run.
      const deadline = Date.now() + 20_000;
      let now = await record(marketing.emailId);
      while (
        (now.opens !== before.opens + 1 || now.clicks !== before.clicks + 1) &&
        Date.now() < deadline
      ) {
        await new Promise((r) => setTimeout(r, 200));
        now = await record(marketing.emailId);
      }
      expect(now).toMatchObject({
        opens: before.opens + 1,
        clicks: before.clicks + 1,
        openedAt: before.openedAt,
      });
      expect(await eventsOf(marketing.contactId, 'email.opened')).toHaveLength(1);
    } finally {
      warn.mockRestore();
      await api.close().catch(() => undefined);
      await relay.cut();
    }
  });
});
