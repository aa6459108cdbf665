import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { EventsService } from '../src/events/events.service';
import { RefusedTargetError, sendOutbound } from '../src/common/http/outbound-http';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { lockWaiters } from './support/locks';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';

/**
 * Outbound webhooks end to end: real Postgres, Redis, SMTP server and HTTP
 * receivers on loopback (WEBHOOK_ALLOW_PRIVATE=true for them; the SSRF guard
 * is tested with it off). Signatures are checked with the Standard Webhooks
 * reference library (`standardwebhooks`), unchanged.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('outbound webhooks (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let receiver: HttpReceiver;
  const req = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    key = () => t.project.secretKey,
  ) => t.app.request({ method, url, key: key(), body });
  const deliveries = async (endpointId: string, query = '') =>
    (await req('GET', `/webhooks/${endpointId}/deliveries?limit=100${query}`)).body.data
      .items as Json[];
  const create = async (body: Json) => {
    const res = await req('POST', '/webhooks', body);
    expect(res.status).toBe(201);
    return res.body.data as Json;
  };
  /** Requests the receiver got for events of this type (parsed bodies). */
  const received = (r: HttpReceiver, type: string) =>
    r.requests.filter((q) => JSON.parse(q.body).type === type);

  beforeAll(async () => {
    t = await startSendingTest('Webhooks', {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '300,300,300',
      RECOVERY_EVERY_MS: '1000',
    });
    db = t.app.app.get(DataSource);
    receiver = await startHttpReceiver();
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  beforeEach(() => {
    receiver.requests.length = 0;
    receiver.answers = [];
  });

  it('creates an endpoint whose secret is shown once; validates url and events', async () => {
    const res = await req('POST', '/webhooks', {
      url: `${receiver.url}/a`,
      events: ['email.*'],
      description: 'A',
    });
    expect(res.status).toBe(201);
    expect(res.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    const got = await req('GET', `/webhooks/${res.body.data.id}`);
    expect(got.body.data).toMatchObject({
      url: `${receiver.url}/a`,
      events: ['email.*'],
      enabled: true,
      description: 'A',
    });
    expect(JSON.stringify(got.body)).not.toContain('whsec_');
    expect(JSON.stringify((await req('GET', '/webhooks')).body)).not.toContain('whsec_');
    for (const bad of [
      { url: 'ftp://x.test/a', events: ['*'] },
      { url: 'not a url', events: ['*'] },
      { url: `${receiver.url}`, events: [] },
      { url: `${receiver.url}`, events: ['Email Sent'] },
      { url: `${receiver.url}`, events: ['email.*.x'] },
      { url: `${receiver.url}`, events: ['*'], secret: 'mine' },
    ]) {
      expect({ bad, status: (await req('POST', '/webhooks', bad)).status }).toEqual({
        bad,
        status: 422,
      });
    }
    await req('DELETE', `/webhooks/${res.body.data.id}`);
  });

  it('signs contact.unsubscribed, email.sent and email.bounced so the reference library verifies them; a rotated secret signs from then on', async () => {
    const endpoint = await create({
      url: `${receiver.url}/signed`,
      events: ['contact.unsubscribed', 'email.sent', 'email.bounced'],
    });
    t.smtp.fail({ stage: 'RCPT', code: 550, recipient: 'gone@example.org' });
    const sent = await t.send({
      to: 'ok@example.org',
      subject: 'Hi',
      body: '<p>Hi</p>',
      from: 'hello@acme.test',
    });
    const bounced = await t.send({
      to: 'gone@example.org',
      subject: 'Hi',
      body: '<p>Hi</p>',
      from: 'hello@acme.test',
    });
    await waitForEmailStatus(t.app, t.project.secretKey, sent.body.data.emails[0].id, ['SENT']);
    await waitForEmailStatus(t.app, t.project.secretKey, bounced.body.data.emails[0].id, [
      'BOUNCED',
    ]);
    const contact = await req('POST', '/contacts', {
      email: 'leaver@example.org',
      subscribed: true,
    });
    await req('PATCH', `/contacts/${contact.body.data.id}`, { subscribed: false });
    await pollUntil(
      async () => receiver.requests.length,
      (n) => n >= 3,
      10_000,
    );
    const wh = new Webhook(endpoint.secret);
    for (const type of ['email.sent', 'email.bounced', 'contact.unsubscribed']) {
      const [request] = received(receiver, type);
      expect({ type, got: !!request }).toEqual({ type, got: true });
      const payload = wh.verify(request.body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      }) as Json;
      expect(payload.type).toBe(type);
      expect(payload.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(payload.data.contactId).toEqual(expect.any(String));
    }
    expect(JSON.parse(received(receiver, 'email.sent')[0].body).data).toMatchObject({
      email: 'ok@example.org',
      emailId: sent.body.data.emails[0].id,
    });
    expect(JSON.parse(received(receiver, 'contact.unsubscribed')[0].body).data.email).toBe(
      'leaver@example.org',
    );
    // A tampered body fails verification.
    const r0 = received(receiver, 'email.sent')[0];
    expect(() =>
      wh.verify(r0.body.replace('ok@', 'ko@'), r0.headers as Record<string, string>),
    ).toThrow();

    const rotated = await req('POST', `/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).not.toBe(endpoint.secret);
    receiver.requests.length = 0;
    const again = await t.send({
      to: 'ok2@example.org',
      subject: 'Hi',
      body: '<p>Hi</p>',
      from: 'hello@acme.test',
    });
    await waitForEmailStatus(t.app, t.project.secretKey, again.body.data.emails[0].id, ['SENT']);
    const [next] = await receiver.waitFor(1);
    const headers = next.headers as Record<string, string>;
    expect(new Webhook(rotated.body.data.secret).verify(next.body, headers)).toMatchObject({
      type: 'email.sent',
    });
    expect(() => wh.verify(next.body, headers)).toThrow();
    await req('DELETE', `/webhooks/${endpoint.id}`);
  });

  it('a domain turning VERIFIED records domain.verified (a project event that endpoints can take)', async () => {
    const events = (await req('GET', '/events?name=domain.verified')).body.data.items as Json[];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      contactId: null,
      data: { domain: 'acme.test', from: 'PENDING' },
    });

    // Checks that overlap (creation, POST /verify, the sweep) all start from PENDING: one event, not one each.
    const domainId = events[0].data.domainId as string;
    await db.query(`UPDATE domains SET status = 'PENDING', verified_at = NULL WHERE id = $1`, [
      domainId,
    ]);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => req('POST', `/domains/${domainId}/verify`)),
    );
    expect(answers.map((a) => a.body.data?.status)).toEqual(Array(5).fill('VERIFIED'));
    const after = (await req('GET', '/events?name=domain.verified')).body.data.items as Json[];
    expect(after).toHaveLength(2);
  });

  it('500, 500, 200: the same webhook-id three times, then SUCCEEDED with attempts 3', async () => {
    const endpoint = await create({
      url: `${receiver.url}/flaky`,
      events: ['webhook.test', 'email.*'],
    });
    receiver.answers = [
      { status: 500, body: 'boom' },
      { status: 500, body: 'boom again' },
    ];
    const test = await req('POST', `/webhooks/${endpoint.id}/test`);
    expect(test.status).toBe(202);
    await receiver.waitFor(3);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.requests).toHaveLength(3);
    expect(new Set(receiver.requests.map((q) => q.headers['webhook-id']))).toEqual(
      new Set([test.body.data.id]),
    );
    const [row] = await pollUntil(
      () => deliveries(endpoint.id),
      (items) => items[0]?.status === 'SUCCEEDED',
      5000,
    );
    expect(row).toMatchObject({
      id: test.body.data.id,
      eventType: 'webhook.test',
      status: 'SUCCEEDED',
      attempts: 3,
      responseStatus: 200,
      nextAttemptAt: null,
    });
    await req('DELETE', `/webhooks/${endpoint.id}`);
  });

  it('exhausts the schedule to FAILED, lists by status, and a manual retry sends it again', async () => {
    const endpoint = await create({ url: `${receiver.url}/down`, events: ['email.*'] });
    receiver.fallback = { status: 503, body: 'x'.repeat(5000) };
    try {
      const test = await req('POST', `/webhooks/${endpoint.id}/test`);
      const failed = await pollUntil(
        () => deliveries(endpoint.id, '&status=FAILED'),
        (items) => items.length === 1,
        10_000,
      );
      expect(failed[0]).toMatchObject({
        id: test.body.data.id,
        status: 'FAILED',
        attempts: 4,
        responseStatus: 503,
      });
      expect(failed[0].lastError).toHaveLength(1024);
      expect(receiver.requests).toHaveLength(4);
      expect(await deliveries(endpoint.id, '&status=SUCCEEDED')).toEqual([]);
      receiver.fallback = { status: 204 };
      const retried = await req(
        'POST',
        `/webhooks/${endpoint.id}/deliveries/${test.body.data.id}/retry`,
      );
      expect(retried.status).toBe(202);
      await pollUntil(
        () => deliveries(endpoint.id, '&status=SUCCEEDED'),
        (items) => items.length === 1,
        5000,
      );
      expect(receiver.requests.at(-1)!.headers['webhook-id']).toBe(test.body.data.id);
      const unknown = await req(
        'POST',
        `/webhooks/${endpoint.id}/deliveries/01900000-0000-7000-8000-000000000000/retry`,
      );
      expect(unknown.status).toBe(404);
    } finally {
      receiver.fallback = { status: 200, body: 'ok' };
      await req('DELETE', `/webhooks/${endpoint.id}`);
    }
  });

  it('a rolled-back transaction delivers nothing; filters and other projects are respected', async () => {
    const endpoint = await create({ url: `${receiver.url}/scoped`, events: ['contact.*'] });
    const other = await t.app.createProject('Other');
    const events = t.app.app.get(EventsService);
    const contact = await req('POST', '/contacts', { email: 'rb@example.org', subscribed: false });
    await expect(
      db.transaction(async (manager) => {
        await events.record(manager, {
          projectId: t.project.id,
          contactId: contact.body.data.id,
          name: 'contact.unsubscribed',
          data: { rolledBack: true },
        });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // Another project's contact events, and this project's events the filter does not take.
    const theirs = await t.app.request({
      method: 'POST',
      url: '/contacts',
      key: other.secretKey,
      body: { email: 'x@example.org', subscribed: true },
    });
    await t.app.request({
      method: 'PATCH',
      url: `/contacts/${theirs.body.data.id}`,
      key: other.secretKey,
      body: { subscribed: false },
    });
    const sent = await t.send({
      to: 'filter@example.org',
      subject: 'Hi',
      body: '<p>Hi</p>',
      from: 'hello@acme.test',
    });
    await waitForEmailStatus(t.app, t.project.secretKey, sent.body.data.emails[0].id, ['SENT']);
    // Then one that must arrive, so the wait has an end.
    const mine = await req('POST', '/contacts', { email: 'mine@example.org', subscribed: true });
    await req('PATCH', `/contacts/${mine.body.data.id}`, { subscribed: false });
    const [only] = await receiver.waitFor(1);
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.requests).toHaveLength(1);
    expect(JSON.parse(only.body).data.email).toBe('mine@example.org');
    const rows = await db.query(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1',
      [endpoint.id],
    );
    expect(rows[0].n).toBe(1);
    await req('DELETE', `/webhooks/${endpoint.id}`);
  });

  it('a slow receiver (10 s) does not delay another endpoint', async () => {
    const slow = await startHttpReceiver();
    slow.fallback = { status: 200, delayMs: 10_000 };
    try {
      const slowEndpoint = await create({ url: `${slow.url}/slow`, events: ['webhook.test'] });
      const fast = await create({ url: `${receiver.url}/fast`, events: ['webhook.test'] });
      for (let i = 0; i < 80; i++) await req('POST', `/webhooks/${slowEndpoint.id}/test`);
      await slow.waitFor(1);
      const started = Date.now();
      await req('POST', `/webhooks/${fast.id}/test`);
      await receiver.waitFor(1, 5000);
      expect(Date.now() - started).toBeLessThan(3000);
      await req('DELETE', `/webhooks/${slowEndpoint.id}`);
      await req('DELETE', `/webhooks/${fast.id}`);
    } finally {
      await slow.close();
    }
  }, 60_000);

  it('an endpoint failing for 3 days is disabled and webhook.disabled is recorded', async () => {
    const endpoint = await create({ url: `${receiver.url}/dead`, events: ['webhook.test'] });
    await db.query(
      `UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = $1`,
      [endpoint.id],
    );
    receiver.fallback = { status: 500 };
    try {
      await req('POST', `/webhooks/${endpoint.id}/test`);
      const row = await pollUntil(
        async () => (await req('GET', `/webhooks/${endpoint.id}`)).body.data,
        (w) => w.enabled === false,
        5000,
      );
      expect(row.disabledReason).toMatch(/failed since/);
      const events = (await req('GET', '/events?name=webhook.disabled')).body.data.items;
      expect(events.some((e: Json) => e.data.endpointId === endpoint.id)).toBe(true);
      const enabled = await req('PATCH', `/webhooks/${endpoint.id}`, { enabled: true });
      expect(enabled.body.data).toMatchObject({
        enabled: true,
        disabledReason: null,
        failingSince: null,
      });
    } finally {
      receiver.fallback = { status: 200, body: 'ok' };
      await req('DELETE', `/webhooks/${endpoint.id}`);
    }
  });

  it('a re-enable queued behind a sender recording a failure of the old streak stays enabled', async () => {
    const endpoint = await create({ url: `${receiver.url}/revived`, events: ['webhook.test'] });
    await db.query(
      `UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = $1`,
      [endpoint.id],
    );
    receiver.fallback = { status: 500 };
    // Another worker's disable, not committed yet: the sender claims the delivery as enabled and its recording waits.
    const other = db.createQueryRunner();
    await other.connect();
    await other.startTransaction();
    try {
      await other.query(
        `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'every delivery failed since then' WHERE id = $1`,
        [endpoint.id],
      );
      await req('POST', `/webhooks/${endpoint.id}/test`);
      await receiver.waitFor(1);
      expect(await lockWaiters(db, 1)).toBeGreaterThanOrEqual(1);
      // The user re-enables, queued behind the recording.
      const patched = req('PATCH', `/webhooks/${endpoint.id}`, { enabled: true });
      expect(await lockWaiters(db, 2)).toBeGreaterThanOrEqual(2);
      await other.commitTransaction();
      const res = await patched;
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        enabled: true,
        disabledReason: null,
        failingSince: null,
      });
      // The sender decided on the old streak; its disable has run (the delivery went on to its last attempt) and did not apply.
      await pollUntil(
        () => deliveries(endpoint.id, '&status=FAILED'),
        (items) => items.length === 1,
        10_000,
      );
      expect((await req('GET', `/webhooks/${endpoint.id}`)).body.data).toMatchObject({
        enabled: true,
        disabledReason: null,
      });
    } finally {
      if (other.isTransactionActive) await other.rollbackTransaction();
      await other.release();
      receiver.fallback = { status: 200, body: 'ok' };
      await req('DELETE', `/webhooks/${endpoint.id}`);
    }
  });

  it('redirects are never followed', async () => {
    const target = await startHttpReceiver();
    try {
      const endpoint = await create({ url: `${receiver.url}/moved`, events: ['webhook.test'] });
      receiver.fallback = { status: 302, headers: { location: `${target.url}/inside` } };
      await req('POST', `/webhooks/${endpoint.id}/test`);
      await pollUntil(
        () => deliveries(endpoint.id, '&status=FAILED'),
        (items) => items.length === 1,
        10_000,
      );
      expect(target.requests).toHaveLength(0);
      expect((await deliveries(endpoint.id))[0].responseStatus).toBe(302);
      await req('DELETE', `/webhooks/${endpoint.id}`);
    } finally {
      receiver.fallback = { status: 200, body: 'ok' };
      await target.close();
    }
  });
});

describe('SSRF guard (WEBHOOK_ALLOW_PRIVATE=false)', () => {
  let receiver: HttpReceiver;
  beforeAll(async () => {
    receiver = await startHttpReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  const attempt = (url: string, allowPrivate = false) =>
    sendOutbound({
      url,
      method: 'POST',
      headers: {},
      body: '{}',
      timeoutMs: 3000,
      allowPrivate,
      maxBodyBytes: 1024,
    });

  it.each([
    ['loopback', () => `http://127.0.0.1:${receiver.port}/x`],
    ['private', () => 'http://10.0.0.1/x'],
    ['metadata', () => 'http://169.254.169.254/latest/meta-data'],
    ['IPv6 loopback', () => `http://[::1]:${receiver.port}/x`],
    ['IPv4-compatible IPv6 loopback', () => `http://[::127.0.0.1]:${receiver.port}/x`],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${receiver.port}/x`],
    ['a name resolving to 127.0.0.1', () => `http://localhost:${receiver.port}/x`],
  ])('refuses %s', async (_name, url) => {
    await expect(attempt(url())).rejects.toBeInstanceOf(RefusedTargetError);
    expect(receiver.requests).toHaveLength(0);
  });

  it('allows them with WEBHOOK_ALLOW_PRIVATE, and the API refuses private literals at create', async () => {
    expect((await attempt(`http://127.0.0.1:${receiver.port}/x`, true)).status).toBe(200);
    const t = await startSendingTest('SSRF', { WEBHOOK_ALLOW_PRIVATE: 'false' });
    try {
      for (const url of [
        'http://127.0.0.1/x',
        'http://10.1.2.3/x',
        'http://169.254.169.254/x',
        'http://[::1]/x',
        'http://[::127.0.0.1]/x',
        'http://localhost:8080/x',
      ]) {
        const res = await t.app.request({
          method: 'POST',
          url: '/webhooks',
          key: t.project.secretKey,
          body: { url, events: ['*'] },
        });
        expect({ url, status: res.status, field: res.body.error?.errors?.[0]?.field }).toEqual({
          url,
          status: 422,
          field: 'url',
        });
      }
    } finally {
      await t.close();
    }
  });
});
