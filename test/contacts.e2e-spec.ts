import { setupTestApp, TestApp, TestProject } from './support/test-app';

describe('Contacts API', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let a: TestProject;
  let b: TestProject;

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    a = await app.createProject('A');
    b = await app.createProject('B');
  });
  afterAll(async () => env?.close());

  const create = (key: string, body: unknown) =>
    app.request({ method: 'POST', url: '/contacts', key, body });

  describe('CRUD', () => {
    it('creates a contact with a normalised email, subscribed by default', async () => {
      const res = await create(a.secretKey, {
        email: '  Grace.Hopper@Example.COM ',
        data: { plan: 'pro' },
      });
      expect(res.status).toBe(201);
      expect(res.body.success).toBe(true);
      expect(res.body.data).toMatchObject({
        email: 'grace.hopper@example.com',
        subscribed: true,
        data: { plan: 'pro' },
      });
      expect(res.body.data.id).toMatch(/^[0-9a-f-]{36}$/);
      const got = await app.request({
        method: 'GET',
        url: `/contacts/${res.body.data.id}`,
        key: a.secretKey,
      });
      expect(got.status).toBe(200);
      expect(got.body.data).toEqual(res.body.data);
    });

    it('refuses a duplicate email (any case) with 409 CONFLICT', async () => {
      await create(a.secretKey, { email: 'dup@example.com' });
      const res = await create(a.secretKey, { email: 'DUP@example.com' });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
      expect(res.body.error.suggestion).toBeTruthy();
    });

    it('allows the same email in another project', async () => {
      await create(a.secretKey, { email: 'shared@example.com' });
      expect((await create(b.secretKey, { email: 'shared@example.com' })).status).toBe(201);
    });

    it('answers 422 for a bad email, naming the field with invalid_string', async () => {
      const res = await create(a.secretKey, { email: 'not-an-email' });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' });
    });

    it('answers 422 for a missing email, an unknown field and a non-object data', async () => {
      expect((await create(a.secretKey, {})).body.error.errors[0]).toMatchObject({
        field: 'email',
        code: 'required',
      });
      const unknown = await create(a.secretKey, { email: 'u@example.com', nickname: 'x' });
      expect(unknown.status).toBe(422);
      expect(unknown.body.error.errors).toContainEqual(
        expect.objectContaining({ field: 'nickname', code: 'unrecognized_keys' }),
      );
      const badData = await create(a.secretKey, { email: 'u@example.com', data: [1, 2] });
      expect(badData.status).toBe(422);
      expect(badData.body.error.errors[0]).toMatchObject({ field: 'data', code: 'invalid_type' });
    });

    it('refuses data over 64 KB with too_big', async () => {
      const res = await create(a.secretKey, {
        email: 'big@example.com',
        data: { blob: 'x'.repeat(70 * 1024) },
      });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'data', code: 'too_big' });
    });

    it('PATCH merges data top-level, null removes a key, and records subscription changes', async () => {
      const created = await create(a.secretKey, {
        email: 'patch@example.com',
        data: { a: 1, b: { x: 1 }, c: 3 },
      });
      const id = created.body.data.id;
      const res = await app.request({
        method: 'PATCH',
        url: `/contacts/${id}`,
        key: a.secretKey,
        body: { subscribed: false, data: { b: { y: 2 }, c: null, d: 'new' } },
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        subscribed: false,
        data: { a: 1, b: { y: 2 }, d: 'new' },
      });
      expect(res.body.data.data).not.toHaveProperty('c');
      expect(new Date(res.body.data.updatedAt).getTime()).toBeGreaterThanOrEqual(
        new Date(created.body.data.updatedAt).getTime(),
      );
      const events = await app.request({
        method: 'GET',
        url: `/events?contactId=${id}`,
        key: a.secretKey,
      });
      expect(events.body.data.items.map((e: { name: string }) => e.name)).toEqual([
        'contact.unsubscribed',
      ]);
    });

    it('PATCH refuses unknown fields and email changes (422)', async () => {
      const id = (await create(a.secretKey, { email: 'patch2@example.com' })).body.data.id;
      const res = await app.request({
        method: 'PATCH',
        url: `/contacts/${id}`,
        key: a.secretKey,
        body: { email: 'x@example.com' },
      });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'email', code: 'unrecognized_keys' });
    });

    it('DELETE erases the contact and its events', async () => {
      const track = await app.request({
        method: 'POST',
        url: '/v1/track',
        key: a.secretKey,
        body: { email: 'gone@example.com', event: 'gone-event' },
      });
      const id = track.body.data.contact;
      const res = await app.request({ method: 'DELETE', url: `/contacts/${id}`, key: a.secretKey });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ id, deleted: true });
      expect(
        (await app.request({ method: 'GET', url: `/contacts/${id}`, key: a.secretKey })).status,
      ).toBe(404);
      const events = await app.request({
        method: 'GET',
        url: `/events?contactId=${id}`,
        key: a.secretKey,
      });
      expect(events.body.data).toMatchObject({ items: [], total: 0 });
      const names = await app.request({ method: 'GET', url: '/events/names', key: a.secretKey });
      expect(names.body.data.items.map((n: { name: string }) => n.name)).not.toContain(
        'gone-event',
      );
      expect(
        (await app.request({ method: 'DELETE', url: `/contacts/${id}`, key: a.secretKey })).status,
      ).toBe(404);
    });

    it('answers 404 CONTACT_NOT_FOUND for an unknown id and for another project’s contact', async () => {
      const unknown = await app.request({
        method: 'GET',
        url: '/contacts/0190a5c4-0000-7000-8000-000000000000',
        key: a.secretKey,
      });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('CONTACT_NOT_FOUND');
      const other = (await create(b.secretKey, { email: 'b-only@example.com' })).body.data.id;
      for (const method of ['GET', 'DELETE'] as const) {
        const res = await app.request({ method, url: `/contacts/${other}`, key: a.secretKey });
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('CONTACT_NOT_FOUND');
      }
      const patch = await app.request({
        method: 'PATCH',
        url: `/contacts/${other}`,
        key: a.secretKey,
        body: { subscribed: false },
      });
      expect(patch.status).toBe(404);
      expect(
        (await app.request({ method: 'GET', url: `/contacts/${other}`, key: b.secretKey })).body
          .data.subscribed,
      ).toBe(true);
    });

    it('answers 400 BAD_REQUEST naming the parameter for a malformed id (never 500)', async () => {
      for (const id of [
        'not-a-uuid',
        '1',
        "1'%20OR%20'1'='1",
        '0190a5c4-0000-7000-8000-00000000000Z',
      ]) {
        for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
          const res = await app.request({
            method,
            url: `/contacts/${id}`,
            key: a.secretKey,
            body: method === 'PATCH' ? {} : undefined,
          });
          expect(res.status).toBe(400);
          expect(res.body.error.code).toBe('BAD_REQUEST');
          expect(res.body.error.errors[0].field).toBe('id');
        }
      }
      const imp = await app.request({
        method: 'GET',
        url: '/contacts/imports/nope',
        key: a.secretKey,
      });
      expect(imp.status).toBe(400);
    });

    it('answers 400 for limit=0, limit=101 and a cursor that does not decode', async () => {
      for (const qs of [
        'limit=0',
        'limit=101',
        'limit=abc',
        'cursor=garbage!',
        'subscribed=maybe',
      ]) {
        const res = await app.request({ method: 'GET', url: `/contacts?${qs}`, key: a.secretKey });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('BAD_REQUEST');
      }
    });

    it('refuses a public key on the contacts endpoints (403 FORBIDDEN)', async () => {
      const res = await app.request({ method: 'GET', url: '/contacts', key: a.publicKey });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect((await create(a.publicKey, { email: 'pk@example.com' })).status).toBe(403);
    });
  });

  describe('listing', () => {
    let p: TestProject;
    const emails: string[] = [];

    beforeAll(async () => {
      p = await app.createProject('Lists');
      // 250 contacts: every third unsubscribed, every fifth with "vip" in the address.
      const body = {
        contacts: Array.from({ length: 250 }, (_, i) => {
          const email = `${i % 5 === 0 ? 'vip' : 'user'}.${String(i).padStart(3, '0')}@list.example`;
          emails.push(email);
          return { email, subscribed: i % 3 !== 0 };
        }),
      };
      // Created one by one so ids (and so the order) are known; the import is covered elsewhere.
      for (const c of body.contacts) await create(p.secretKey, c);
    });

    async function walk(
      query: string,
    ): Promise<{ emails: string[]; totals: number[]; pages: number }> {
      const seen: string[] = [];
      const totals: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const url: string = `/contacts?limit=100${query}${cursor ? `&cursor=${cursor}` : ''}`;
        const res = await app.request({ method: 'GET', url, key: p.secretKey });
        expect(res.status).toBe(200);
        seen.push(...res.body.data.items.map((c: { email: string }) => c.email));
        totals.push(res.body.data.total);
        expect(res.body.data.hasMore).toBe(res.body.data.nextCursor !== null);
        cursor = res.body.data.nextCursor;
        pages++;
      } while (cursor);
      return { emails: seen, totals, pages };
    }

    it('walks 250 contacts with limit=100, newest first, without loss or repeat', async () => {
      const { emails: seen, totals, pages } = await walk('');
      expect(pages).toBe(3);
      expect(seen).toEqual([...emails].reverse());
      expect(new Set(totals)).toEqual(new Set([250]));
    });

    it('applies subscribed and search filters across pages, with matching totals', async () => {
      const expected = emails.filter((e, i) => i % 3 !== 0 && e.startsWith('vip')).reverse();
      const { emails: seen, totals } = await walk('&subscribed=true&search=VIP');
      expect(seen).toEqual(expected);
      expect(totals[0]).toBe(expected.length);
      const unsub = await walk('&subscribed=false');
      expect(unsub.emails).toEqual(emails.filter((_, i) => i % 3 === 0).reverse());
    });

    it('treats search wildcards literally and filters by exact email', async () => {
      const pct = await app.request({
        method: 'GET',
        url: '/contacts?search=%25',
        key: p.secretKey,
      });
      expect(pct.body.data.total).toBe(0);
      const exact = await app.request({
        method: 'GET',
        url: `/contacts?email=${encodeURIComponent(' USER.001@list.example ')}`,
        key: p.secretKey,
      });
      expect(exact.body.data.items.map((c: { email: string }) => c.email)).toEqual([
        'user.001@list.example',
      ]);
      expect(exact.body.data.total).toBe(1);
    });
  });
});
