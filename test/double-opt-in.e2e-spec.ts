import { Client } from 'pg';
import { ConfirmationTokens } from '../src/opt-in/confirmation-token';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';
import { ReceivedMessage } from './support/smtp-server';
import { setupTestApp, TestProject } from './support/test-app';

/**
 * Double opt-in (contract "Double opt-in", issue 27 item 3): POST /v1/subscribe
 * with a public key from a browser, one confirmation email through the real
 * pipeline to a loopback SMTP sink, the signed link that confirms once, the
 * 10-minute rule (also under concurrent requests), the setting's validation,
 * the redirect, and the pk_ rule with double opt-in off.
 */
const ORIGIN = 'https://shop.example.org';
const TEST_SECRET = 'test-secret-test-secret-test-secret-0123456789';

type Event = { name: string; data: Record<string, unknown>; emailId: string | null };

describe('double opt-in (e2e)', () => {
  let t: SendingTest;
  let p: TestProject;
  let pg: Client;

  const subscribe = (body: unknown, key = p.publicKey, headers: Record<string, string> = {}) =>
    t.app.request({ method: 'POST', url: '/v1/subscribe', key, body, headers });
  const patchProject = (body: unknown, project = p) =>
    t.app.request({ method: 'PATCH', url: '/project', key: project.secretKey, body });
  const events = async (contactId: string): Promise<Event[]> =>
    (
      await t.app.request({
        method: 'GET',
        url: `/events?contactId=${contactId}&limit=100`,
        key: p.secretKey,
      })
    ).body.data.items;
  const namesOf = async (contactId: string) => (await events(contactId)).map((e) => e.name);
  const confirm = (url: string) =>
    t.app.request({ method: 'GET', url: new URL(url).pathname, headers: { origin: ORIGIN } });
  const setDoubleOptIn = async (doubleOptIn: Record<string, unknown>) => {
    const res = await patchProject({ doubleOptIn });
    expect(res.status).toBe(200);
  };
  /** The confirmation messages the sink received for `to`, waiting for `count` of them. */
  const confirmationsTo = async (to: string, count: number): Promise<ReceivedMessage[]> => {
    const messages = await pollUntil(
      async () => t.smtp.messagesTo(to),
      (received) => received.length >= count,
      20_000,
    );
    expect(messages.length).toBeGreaterThanOrEqual(count);
    return messages;
  };
  const linkIn = (message: ReceivedMessage): string => {
    const match = /https:\/\/mail\.example\.test\/confirm\/[A-Za-z0-9_-]+/.exec(
      message.parsed?.html || '',
    );
    if (!match) throw new Error(`no confirmation link in ${message.parsed?.html}`);
    return match[0];
  };
  /** Lets the confirmation window of `email` pass, as if 11 minutes went by. */
  const elapseWindow = (email: string) =>
    pg.query(
      `UPDATE opt_in_confirmations SET sent_at = sent_at - interval '11 minutes'
        WHERE contact_id = (SELECT id FROM contacts WHERE project_id = $1 AND email = $2)`,
      [p.id, email],
    );
  /** Queued emails of a contact (the sink may still be on its way; the rows are not). */
  const emailRows = async (contactId: string) =>
    (
      await pg.query<{ source: string; status: string; subject: string }>(
        'SELECT source, status, subject FROM emails WHERE contact_id = $1',
        [contactId],
      )
    ).rows;

  beforeAll(async () => {
    t = await startSendingTest('OptIn');
    p = t.project;
    pg = new Client({ connectionString: t.db.url });
    await pg.connect();
    const res = await patchProject({ defaultFrom: { email: 'news@acme.test', name: 'Acme' } });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await pg?.end();
    await t?.close();
  });

  describe('PATCH /project {doubleOptIn}', () => {
    it('needs the project defaultFrom to enable it (422), and keeps defaultFrom while enabled', async () => {
      const bare = await t.app.createProject('No sender');
      const refused = await patchProject({ doubleOptIn: { enabled: true } }, bare);
      expect(refused.status).toBe(422);
      expect(refused.body.error.code).toBe('VALIDATION_ERROR');
      expect(refused.body.error.errors[0].field).toBe('doubleOptIn.enabled');
      const unchanged = await t.app.request({
        method: 'GET',
        url: '/project',
        key: bare.secretKey,
      });
      expect(unchanged.body.data.doubleOptIn).toEqual({
        enabled: false,
        templateId: null,
        confirmRedirectUrl: null,
      });

      await setDoubleOptIn({ enabled: true });
      const removing = await patchProject({ defaultFrom: null });
      expect(removing.status).toBe(422);
      expect(removing.body.error.errors[0].field).toBe('defaultFrom');
    });

    it("refuses another project's template and non-http(s) redirect URLs", async () => {
      const other = await t.app.createProject('Other');
      const foreign = await t.app.request({
        method: 'POST',
        url: '/templates',
        key: other.secretKey,
        body: { name: 'x', subject: 'x', body: '{{ confirmUrl }}', type: 'TRANSACTIONAL' },
      });
      expect(foreign.status).toBe(201);
      const res = await patchProject({
        doubleOptIn: { enabled: true, templateId: foreign.body.data.id },
      });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('TEMPLATE_NOT_FOUND');
      for (const url of ['javascript:alert(1)', 'ftp://example.org/x', 'example.org/thanks']) {
        const bad = await patchProject({ doubleOptIn: { enabled: true, confirmRedirectUrl: url } });
        expect(bad.status).toBe(422);
        expect(bad.body.error.errors[0].field).toBe('doubleOptIn.confirmRedirectUrl');
      }
      const unknown = await patchProject({ doubleOptIn: { enabled: true, extra: 1 } });
      expect(unknown.status).toBe(422);
    });
  });

  it('pk_ from a browser: CORS for any origin, one confirmation email, the link confirms once', async () => {
    await setDoubleOptIn({ enabled: true, templateId: null, confirmRedirectUrl: null });
    const preflight = await t.app.app.inject({
      method: 'OPTIONS',
      url: '/v1/subscribe',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(String(preflight.headers['access-control-allow-methods'])).toContain('POST');
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();

    const email = 'ada@example.org';
    const res = await subscribe({ email: ' Ada@Example.org', data: { plan: 'pro' } }, p.publicKey, {
      origin: ORIGIN,
    });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['ratelimit-limit']).toBeDefined();
    expect(res.body.data).toEqual({ contact: expect.any(String), status: 'pending' });
    const contactId = res.body.data.contact;
    expect(await t.contact(contactId)).toMatchObject({
      email,
      subscribed: false,
      data: { plan: 'pro' },
    });

    const [message] = await confirmationsTo(email, 1);
    expect(message.parsed?.subject).toBe('Confirm your subscription');
    expect(message.parsed?.from?.value[0].address).toBe('news@acme.test');
    expect(message.parsed?.headers.get('list-unsubscribe')).toBeUndefined();
    // The sink has the message; the row is finished right after the relay's answer.
    const rows = await pollUntil(
      () => emailRows(contactId),
      (r) => r[0]?.status === 'SENT',
      10_000,
    );
    expect(rows).toEqual([
      { source: 'TRANSACTIONAL', status: 'SENT', subject: 'Confirm your subscription' },
    ]);
    expect(await namesOf(contactId)).toEqual(['email.sent', 'email.queued']);

    const link = linkIn(message);
    const first = await confirm(link);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toContain('text/html');
    expect(first.raw).toContain('Subscription confirmed');
    expect(first.raw).toContain(email);
    expect((await t.contact(contactId)).subscribed).toBe(true);
    const afterFirst = await events(contactId);
    expect(afterFirst.map((e) => e.name)).toEqual([
      'contact.subscribed',
      'contact.confirmed',
      'email.sent',
      'email.queued',
    ]);

    const second = await confirm(link);
    expect(second.status).toBe(200);
    expect(second.raw).toBe(first.raw);
    expect(await events(contactId)).toEqual(afterFirst);

    // Already subscribed: nothing more is sent, whatever the window.
    await elapseWindow(email);
    const again = await subscribe({ email });
    expect(again.body.data).toEqual({ contact: contactId, status: 'subscribed' });
    expect(await emailRows(contactId)).toHaveLength(1);
  });

  it('an unused link does not undo a later opt-out: after an unsubscribe it confirms nothing', async () => {
    await setDoubleOptIn({ enabled: true, templateId: null, confirmRedirectUrl: null });
    const email = 'later-out@example.org';
    const contactId = (await subscribe({ email })).body.data.contact;
    const [message] = await confirmationsTo(email, 1);
    const contact = (subscribed: boolean) =>
      t.app.request({
        method: 'PATCH',
        url: `/contacts/${contactId}`,
        key: p.secretKey,
        body: { subscribed },
      });
    // Subscribed another way, then unsubscribed (a one-click link, say): the old link is void.
    expect((await contact(true)).status).toBe(200);
    expect((await contact(false)).status).toBe(200);
    const before = await namesOf(contactId);
    const page = await confirm(linkIn(message));
    expect(page.status).toBe(200);
    expect((await t.contact(contactId)).subscribed).toBe(false);
    expect(await namesOf(contactId)).toEqual(before);
  });

  it('sends nothing more for the same address within 10 minutes, also to concurrent requests', async () => {
    await setDoubleOptIn({ enabled: true });
    const email = 'burst@example.org';
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => subscribe({ email }, p.publicKey)),
    );
    for (const answer of answers) expect(answer.body.data.status).toBe('pending');
    const contactId = answers[0].body.data.contact;
    expect(new Set(answers.map((a) => a.body.data.contact))).toEqual(new Set([contactId]));
    await confirmationsTo(email, 1);
    const later = await subscribe({ email }, p.secretKey);
    expect(later.body.data.status).toBe('pending');
    expect(await emailRows(contactId)).toHaveLength(1);

    // Past the window, a request sends a fresh confirmation; both links work until one is used.
    await elapseWindow(email);
    expect((await subscribe({ email })).body.data.status).toBe('pending');
    const messages = await confirmationsTo(email, 2);
    expect(messages).toHaveLength(2);
    expect(await emailRows(contactId)).toHaveLength(2);
    const fresh = await confirm(linkIn(messages[1]));
    expect(fresh.status).toBe(200);
    expect((await t.contact(contactId)).subscribed).toBe(true);
    // The older link, issued before this confirmation, records nothing.
    const before = await namesOf(contactId);
    expect((await confirm(linkIn(messages[0]))).status).toBe(200);
    expect(await namesOf(contactId)).toEqual(before);
  });

  it('a confirmation template gets confirmUrl; confirmRedirectUrl answers 302', async () => {
    const template = await t.createTemplate({
      name: 'Confirm',
      subject: 'Please confirm, {{ email }}',
      body: '<p>Hi {{ name }}</p><p><a href="{{ confirmUrl }}">Confirm</a></p>',
      type: 'TRANSACTIONAL',
    });
    expect(template.status).toBe(201);
    await setDoubleOptIn({
      enabled: true,
      templateId: template.body.data.id,
      confirmRedirectUrl: 'https://shop.example.org/welcome?from=mail',
    });
    const email = 'grace@example.org';
    const res = await subscribe({ email, data: { name: 'Grace' } });
    const [message] = await confirmationsTo(email, 1);
    expect(message.parsed?.subject).toBe(`Please confirm, ${email}`);
    expect(message.parsed?.html).toContain('Hi Grace');
    const link = linkIn(message);
    for (let i = 0; i < 2; i++) {
      const redirected = await confirm(link);
      expect(redirected.status).toBe(302);
      expect(redirected.headers.location).toBe('https://shop.example.org/welcome?from=mail');
    }
    expect((await t.contact(res.body.data.contact)).subscribed).toBe(true);
    expect(
      (await namesOf(res.body.data.contact)).filter((n) => n === 'contact.confirmed'),
    ).toHaveLength(1);
    await setDoubleOptIn({ enabled: true, templateId: null, confirmRedirectUrl: null });
  });

  it('a confirmRedirectUrl beyond Latin-1 (an IDN host, a non-ASCII path) redirects, encoded', async () => {
    await setDoubleOptIn({ enabled: true, confirmRedirectUrl: 'https://例え.jp/ようこそ→?x=ü' });
    const email = 'idn@example.org';
    await subscribe({ email });
    const [message] = await confirmationsTo(email, 1);
    const redirected = await confirm(linkIn(message));
    expect(redirected.status).toBe(302);
    expect(redirected.headers.location).toBe(new URL('https://例え.jp/ようこそ→?x=ü').href);
    expect(redirected.headers.location).toMatch(/^https:\/\/xn--r8jz45g\.jp\/%E3%82%88/);
    await setDoubleOptIn({ enabled: true, templateId: null, confirmRedirectUrl: null });
  });

  it('a forged, altered or expired link is a 404 page and changes nothing', async () => {
    await setDoubleOptIn({ enabled: true });
    const email = 'forged@example.org';
    const res = await subscribe({ email });
    const contactId = res.body.data.contact;
    const [message] = await confirmationsTo(email, 1);
    const token = linkIn(message).split('/').pop() as string;
    const altered = token.slice(0, -3) + (token.endsWith('AAA') ? 'BBB' : 'AAA');
    const expired = new ConfirmationTokens(TEST_SECRET).sign({
      projectId: p.id,
      contactId,
      issuedAt: new Date(Date.now() - 31 * 24 * 3_600_000),
    });
    const otherSecret = new ConfirmationTokens('another-secret-another-secret-another-01').sign({
      projectId: p.id,
      contactId,
      issuedAt: new Date(),
    });
    for (const bad of [altered, expired, otherSecret, 'nonsense']) {
      const page = await t.app.request({ method: 'GET', url: `/confirm/${bad}` });
      expect(page.status).toBe(404);
      expect(page.headers['content-type']).toContain('text/html');
      expect(page.raw).toContain('Link not valid');
    }
    expect((await t.contact(contactId)).subscribed).toBe(false);
    expect(await namesOf(contactId)).not.toContain('contact.confirmed');
  });

  describe('doubleOptIn off', () => {
    it('subscribes new contacts at once and sends nothing', async () => {
      await setDoubleOptIn({ enabled: false });
      for (const key of [p.publicKey, p.secretKey]) {
        const email = `now-${key.slice(0, 2)}@example.org`;
        const res = await subscribe({ email, data: { via: key.slice(0, 2) } }, key);
        expect(res.status).toBe(200);
        expect(res.body.data.status).toBe('subscribed');
        expect(await t.contact(res.body.data.contact)).toMatchObject({ subscribed: true });
        expect(await emailRows(res.body.data.contact)).toHaveLength(0);
      }
    });

    it('an sk_ key resubscribes; a pk_ key never does, it sends a confirmation instead', async () => {
      await setDoubleOptIn({ enabled: false });
      const email = 'left@example.org';
      const created = await t.app.request({
        method: 'POST',
        url: '/contacts',
        key: p.secretKey,
        body: { email, subscribed: false },
      });
      const contactId = created.body.data.id;

      const viaPublic = await subscribe({ email }, p.publicKey);
      expect(viaPublic.body.data).toEqual({ contact: contactId, status: 'pending' });
      expect((await t.contact(contactId)).subscribed).toBe(false);
      const [message] = await confirmationsTo(email, 1);
      expect(await namesOf(contactId)).not.toContain('contact.subscribed');

      const viaSecret = await subscribe({ email }, p.secretKey);
      expect(viaSecret.body.data).toEqual({ contact: contactId, status: 'subscribed' });
      expect((await t.contact(contactId)).subscribed).toBe(true);
      const subscribed = (await events(contactId)).filter((e) => e.name === 'contact.subscribed');
      expect(subscribed).toHaveLength(1);
      expect(subscribed[0].data).toEqual({ source: 'subscribe' });

      // Unsubscribed after the link was sent: the later opt-out wins, the old link confirms nothing.
      await t.app.request({
        method: 'PATCH',
        url: `/contacts/${contactId}`,
        key: p.secretKey,
        body: { subscribed: false },
      });
      expect((await confirm(linkIn(message))).status).toBe(200);
      expect((await t.contact(contactId)).subscribed).toBe(false);
    });
  });

  it('a pk_ key elsewhere is still 403, and bad bodies are 422', async () => {
    const forbidden = await t.app.request({ method: 'GET', url: '/contacts', key: p.publicKey });
    expect(forbidden.status).toBe(403);
    const bad = await subscribe({ email: 'not-an-address' });
    expect(bad.status).toBe(422);
    const extra = await subscribe({ email: 'x@example.org', subscribed: true });
    expect(extra.status).toBe(422);
    expect(extra.body.error.errors[0].code).toBe('unrecognized_keys');
  });
});

describe('POST /v1/subscribe and the pk_ budget (e2e)', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api', PUBLIC_RATE_LIMIT_PER_MINUTE: '2' });
  });
  afterAll(async () => env?.close());

  it('counts public-key subscribes in PUBLIC_RATE_LIMIT_PER_MINUTE, apart from the secret keys', async () => {
    const p = await env.app.createProject('Budget');
    const subscribe = (key: string, n: number) =>
      env.app.request({
        method: 'POST',
        url: '/v1/subscribe',
        key,
        body: { email: `budget-${n}@example.org` },
      });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await subscribe(p.publicKey, i));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(answers[0].headers['ratelimit-limit']).toBe('2');
    expect(answers[2].body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(answers[2].headers['retry-after']).toBeDefined();
    expect((await subscribe(p.secretKey, 9)).status).toBe(200);
  });
});
