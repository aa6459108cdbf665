import { DataSource } from 'typeorm';
import { EventHooks, RecordedEvent } from '../src/events/event-hooks';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

describe('POST /v1/track and the events API', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let p: TestProject;
  let other: TestProject;
  const heard: RecordedEvent[][] = [];

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    p = await app.createProject('Track');
    other = await app.createProject('Other');
    app.app.get(EventHooks).register({ onEventsRecorded: (events) => void heard.push(events) });
  });
  afterAll(async () => env?.close());

  const track = (body: unknown, key = p.secretKey) =>
    app.request({ method: 'POST', url: '/v1/track', key, body });
  const getContact = async (id: string, key = p.secretKey) =>
    (await app.request({ method: 'GET', url: `/contacts/${id}`, key })).body.data;

  it('creates a subscribed contact and answers 200 {contact, event, timestamp}', async () => {
    const res = await track({
      email: ' New.User@Example.com',
      event: 'signup',
      data: { plan: 'free' },
    });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data).sort()).toEqual(['contact', 'event', 'timestamp']);
    expect(new Date(res.body.data.timestamp).toISOString()).toBe(res.body.data.timestamp);
    const contact = await getContact(res.body.data.contact);
    expect(contact).toMatchObject({
      email: 'new.user@example.com',
      subscribed: true,
      data: { plan: 'free' },
    });
    const events = await app.request({
      method: 'GET',
      url: `/events?contactId=${contact.id}`,
      key: p.secretKey,
    });
    expect(events.body.data.items).toEqual([
      {
        id: res.body.data.event,
        name: 'signup',
        contactId: contact.id,
        emailId: null,
        data: { plan: 'free' },
        createdAt: res.body.data.timestamp,
      },
    ]);
  });

  it('keeps an existing contact’s subscription unless subscribed is given, recording the change as an event', async () => {
    const first = await track({ email: 'keep@example.com', event: 'a', subscribed: false });
    const id = first.body.data.contact;
    expect((await getContact(id)).subscribed).toBe(false);
    await track({ email: 'keep@example.com', event: 'b' });
    expect((await getContact(id)).subscribed).toBe(false);
    await track({ email: 'keep@example.com', event: 'c', subscribed: true });
    expect((await getContact(id)).subscribed).toBe(true);
    await track({ email: 'keep@example.com', event: 'd', subscribed: true });
    const events = await app.request({
      method: 'GET',
      url: `/events?contactId=${id}&limit=100`,
      key: p.secretKey,
    });
    // Newest first: the subscription change is recorded once, right after the event that caused it.
    expect(events.body.data.items.map((e: { name: string }) => e.name)).toEqual([
      'd',
      'contact.subscribed',
      'c',
      'b',
      'a',
    ]);
  });

  it('merges data top-level and keeps non-persistent values on the event only', async () => {
    const first = await track({
      email: 'merge@example.com',
      event: 'x',
      data: { a: 1, b: 'keep', nested: { x: 1 } },
    });
    const id = first.body.data.contact;
    const second = await track({
      email: 'merge@example.com',
      event: 'purchase',
      data: {
        a: 2,
        nested: { y: 2 },
        amount: { value: 42, persistent: false },
        tier: { value: 'gold', persistent: true },
      },
    });
    expect(second.body.data.contact).toBe(id);
    expect((await getContact(id)).data).toEqual({
      a: 2,
      b: 'keep',
      nested: { y: 2 },
      tier: 'gold',
    });
    const events = await app.request({
      method: 'GET',
      url: `/events?contactId=${id}&name=purchase`,
      key: p.secretKey,
    });
    expect(events.body.data.items[0].data).toEqual({
      a: 2,
      nested: { y: 2 },
      amount: { value: 42, persistent: false },
      tier: { value: 'gold', persistent: true },
    });
  });

  it('refuses reserved and out-of-range event names with 422', async () => {
    for (const event of ['email.sent', 'contact.created', 'segment.entered', 'Email.opened']) {
      const res = await track({ email: 'r@example.com', event });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'event', code: 'reserved_event' });
    }
    expect((await track({ email: 'r@example.com', event: '' })).body.error.errors[0]).toMatchObject(
      { field: 'event' },
    );
    const long = await track({ email: 'r@example.com', event: 'x'.repeat(101) });
    expect(long.body.error.errors[0]).toMatchObject({ field: 'event', code: 'too_big' });
    expect((await track({ email: 'r@example.com', event: 'x'.repeat(100) })).status).toBe(200);
    const bad = await track({ email: 'nope', event: 'ok' });
    expect(bad.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' });
    const extra = await track({ email: 'r@example.com', event: 'ok', foo: 1 });
    expect(extra.body.error.errors[0]).toMatchObject({ field: 'foo', code: 'unrecognized_keys' });
  });

  it('accepts a public key on /v1/track only', async () => {
    const res = await track({ email: 'pk@example.com', event: 'pk-event' }, p.publicKey);
    expect(res.status).toBe(200);
    for (const url of [
      '/contacts',
      '/events',
      '/events/names',
      `/contacts/${res.body.data.contact}`,
    ]) {
      const denied = await app.request({ method: 'GET', url, key: p.publicKey });
      expect(denied.status).toBe(403);
      expect(denied.body.error.code).toBe('FORBIDDEN');
    }
  });

  it('creates exactly one contact and ten events for ten parallel tracks of a new email', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        track({ email: 'race@example.com', event: 'race', data: { [`k${i}`]: i } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const ids = new Set(results.map((r) => r.body.data.contact));
    expect(ids.size).toBe(1);
    const list = await app.request({
      method: 'GET',
      url: '/contacts?email=race@example.com',
      key: p.secretKey,
    });
    expect(list.body.data.total).toBe(1);
    expect(Object.keys(list.body.data.items[0].data)).toHaveLength(10);
    const events = await app.request({
      method: 'GET',
      url: '/events?name=race&limit=100',
      key: p.secretKey,
    });
    expect(events.body.data.total).toBe(10);
    expect(new Set(events.body.data.items.map((e: { id: string }) => e.id)).size).toBe(10);
  });

  it('tells registered listeners about committed events, after commit', async () => {
    heard.length = 0;
    const res = await track({ email: 'hook@example.com', event: 'hooked', subscribed: true });
    expect(heard).toHaveLength(1);
    expect(heard[0][0]).toMatchObject({
      id: res.body.data.event,
      name: 'hooked',
      email: 'hook@example.com',
      projectId: p.id,
    });
    // The event was visible to other connections when the listener ran.
    const ds = app.app.get(DataSource);
    const [{ n }] = await ds.query('SELECT count(*)::int AS n FROM events WHERE id = $1', [
      heard[0][0].id,
    ]);
    expect(n).toBe(1);
    heard.length = 0;
    expect((await track({ email: 'hook@example.com', event: 'email.sent' })).status).toBe(422);
    expect(heard).toHaveLength(0);
  });

  describe('GET /events', () => {
    let q: TestProject;
    const ids: string[] = [];
    let middle: string;

    beforeAll(async () => {
      q = await app.createProject('Events');
      for (let i = 0; i < 45; i++) {
        const res = await track(
          { email: `e${i % 3}@example.com`, event: i % 2 ? 'odd' : 'even', data: { i } },
          q.secretKey,
        );
        ids.push(res.body.data.event);
        if (i === 30) middle = res.body.data.timestamp;
      }
    });

    it('pages newest first without loss or repeat, with totals', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const url: string = `/events?limit=20${cursor ? `&cursor=${cursor}` : ''}`;
        const res = await app.request({ method: 'GET', url, key: q.secretKey });
        expect(res.body.data.total).toBe(45);
        seen.push(...res.body.data.items.map((e: { id: string }) => e.id));
        cursor = res.body.data.nextCursor;
      } while (cursor);
      expect(seen).toEqual([...ids].reverse());
    });

    it('filters by name, contactId, since and until', async () => {
      const odd = await app.request({
        method: 'GET',
        url: '/events?name=odd&limit=100',
        key: q.secretKey,
      });
      expect(odd.body.data.total).toBe(22);
      expect(odd.body.data.items.every((e: { name: string }) => e.name === 'odd')).toBe(true);
      const contactId = odd.body.data.items[0].contactId;
      const byContact = await app.request({
        method: 'GET',
        url: `/events?contactId=${contactId}&name=odd&limit=100`,
        key: q.secretKey,
      });
      expect(
        byContact.body.data.items.every((e: { contactId: string }) => e.contactId === contactId),
      ).toBe(true);
      expect(byContact.body.data.total).toBe(byContact.body.data.items.length);
      const since = await app.request({
        method: 'GET',
        url: `/events?since=${middle}&limit=100`,
        key: q.secretKey,
      });
      const until = await app.request({
        method: 'GET',
        url: `/events?until=${middle}&limit=100`,
        key: q.secretKey,
      });
      expect(since.body.data.total + until.body.data.total).toBe(45);
      expect(since.body.data.items.map((e: { id: string }) => e.id)).toContain(ids[30]);
      expect(since.body.data.items.every((e: { createdAt: string }) => e.createdAt >= middle)).toBe(
        true,
      );
      expect(until.body.data.items.every((e: { createdAt: string }) => e.createdAt < middle)).toBe(
        true,
      );
    });

    it('answers 400 for bad filters and cursors', async () => {
      for (const qs of [
        'since=yesterday',
        'contactId=123',
        'limit=0',
        'cursor=djE6eHl6',
        'until=2024-13-01T00:00:00Z',
      ]) {
        const res = await app.request({ method: 'GET', url: `/events?${qs}`, key: q.secretKey });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('BAD_REQUEST');
      }
    });

    it('lists names with counts and last occurrence, most recent first, paginated', async () => {
      const res = await app.request({ method: 'GET', url: '/events/names', key: q.secretKey });
      expect(res.body.data).toMatchObject({ total: 2, hasMore: false, nextCursor: null });
      expect(
        res.body.data.items.map((n: { name: string; count: number }) => [n.name, n.count]),
      ).toEqual([
        ['even', 23],
        ['odd', 22],
      ]);
      const first = await app.request({
        method: 'GET',
        url: '/events/names?limit=1',
        key: q.secretKey,
      });
      expect(first.body.data.items[0].name).toBe('even');
      expect(first.body.data.hasMore).toBe(true);
      const second = await app.request({
        method: 'GET',
        url: `/events/names?limit=1&cursor=${first.body.data.nextCursor}`,
        key: q.secretKey,
      });
      expect(second.body.data.items.map((n: { name: string }) => n.name)).toEqual(['odd']);
      expect(second.body.data.hasMore).toBe(false);
      const bad = await app.request({
        method: 'GET',
        url: '/events/names?cursor=zzz',
        key: q.secretKey,
      });
      expect(bad.status).toBe(400);
    });
  });

  it('isolates projects on every endpoint', async () => {
    const mine = await track({ email: 'iso@example.com', event: 'iso-only' });
    const contactId = mine.body.data.contact;
    const o = other.secretKey;
    expect((await app.request({ method: 'GET', url: '/contacts', key: o })).body.data.total).toBe(
      0,
    );
    expect(
      (await app.request({ method: 'GET', url: '/contacts?email=iso@example.com', key: o })).body
        .data.items,
    ).toEqual([]);
    expect(
      (await app.request({ method: 'GET', url: `/contacts/${contactId}`, key: o })).status,
    ).toBe(404);
    expect((await app.request({ method: 'GET', url: '/events', key: o })).body.data).toMatchObject({
      items: [],
      total: 0,
    });
    expect(
      (await app.request({ method: 'GET', url: `/events?contactId=${contactId}`, key: o })).body
        .data.total,
    ).toBe(0);
    expect(
      (await app.request({ method: 'GET', url: '/events?name=iso-only', key: o })).body.data.total,
    ).toBe(0);
    expect(
      (await app.request({ method: 'GET', url: '/events/names', key: o })).body.data.items,
    ).toEqual([]);
    // The same email tracked in the other project is a different contact.
    const theirs = await track({ email: 'iso@example.com', event: 'iso-only' }, o);
    expect(theirs.body.data.contact).not.toBe(contactId);
    expect(
      (await app.request({ method: 'GET', url: '/events?name=iso-only', key: p.secretKey })).body
        .data.total,
    ).toBe(1);
  });
});
