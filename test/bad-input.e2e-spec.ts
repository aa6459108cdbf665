import { Client } from 'pg';
import { tableFingerprint } from './support/fingerprint';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { postImport, waitForImport } from './support/imports';
import { InjectResult, setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * The bad-input quality bar, adversarially: every bad input to a write
 * endpoint of contacts, events, domains, segments and project gets the
 * documented error envelope and changes nothing (checked with a fingerprint
 * of every table a client can write), and no response carries a stack trace,
 * SQL text or a secret.
 *
 * Decisions where the contract is silent (also in docs/bad-input.md):
 * - NUL characters and unpaired UTF-16 surrogates anywhere in a JSON body
 *   (values and keys) are a 422 `invalid_string` naming the field: Postgres
 *   can store neither, and a 500 is not an answer to a client mistake.
 * - JSON nested deeper than 32 levels is a 422 `too_big` (Postgres and the
 *   validator would otherwise recurse without bound).
 * - Event names are identifiers: control characters (CR, LF, TAB, NUL…) are
 *   a 422 `invalid_string`. Surrounding whitespace of an email or domain
 *   (CR/LF included) is trimmed as the contract says; inside, it is a 422.
 * - Segment and project names are display text never placed in a mail
 *   header: CR/LF inside is stored as given; NUL is refused as above.
 * - `__proto__` anywhere, and `constructor.prototype`, are refused as
 *   malformed JSON (400) by the body parser; a plain `constructor` key is
 *   ordinary data.
 */

interface FieldIssue {
  field: string;
  code: string;
}

const UNKNOWN_UUID = '0190a000-0000-7000-8000-000000000000';
const MB = 1024 * 1024;

describe('Bad input (e2e): envelope, no change, no leak', () => {
  let dns: TestDnsServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let a: TestProject;
  let b: TestProject;
  let db: Client;
  /** Resources of project A (ours) and project B (another project). */
  const ids = {
    contactA: '',
    contactB: '',
    segmentA: '',
    segmentB: '',
    domainA: '',
    domainB: '',
    importB: '',
  };
  let uniq = 0;
  const freshEmail = () => `fresh-${++uniq}@example.com`;

  beforeAll(async () => {
    dns = await startTestDnsServer();
    ctx = await setupTestApp({ DNS_SERVERS: dns.address, API_RATE_LIMIT_PER_MINUTE: '1000000' });
    app = ctx.app;
    a = await app.createProject('Project A');
    b = await app.createProject('Project B');
    db = new Client({ connectionString: ctx.db.url });
    await db.connect();

    for (const [p, suffix] of [
      [a, 'A'],
      [b, 'B'],
    ] as const) {
      const contact = await app.request({
        method: 'POST',
        url: '/contacts',
        key: p.secretKey,
        body: { email: `owner-${suffix.toLowerCase()}@example.com`, data: { plan: 'pro' } },
      });
      expect(contact.status).toBe(201);
      const tracked = await app.request({
        method: 'POST',
        url: '/v1/track',
        key: p.secretKey,
        body: { email: `owner-${suffix.toLowerCase()}@example.com`, event: 'signup' },
      });
      expect(tracked.status).toBe(200);
      const segment = await app.request({
        method: 'POST',
        url: '/segments',
        key: p.secretKey,
        body: {
          name: `Pro ${suffix}`,
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
          },
        },
      });
      expect(segment.status).toBe(201);
      const domain = await app.request({
        method: 'POST',
        url: '/domains',
        key: p.secretKey,
        body: { domain: `bad-input-${suffix.toLowerCase()}.example.com` },
      });
      expect(domain.status).toBe(201);
      if (p === a) {
        ids.contactA = contact.body.data.id;
        ids.segmentA = segment.body.data.id;
        ids.domainA = domain.body.data.id;
      } else {
        ids.contactB = contact.body.data.id;
        ids.segmentB = segment.body.data.id;
        ids.domainB = domain.body.data.id;
      }
    }
    const imported = await app.request({
      method: 'POST',
      url: '/contacts/import',
      key: b.secretKey,
      body: { contacts: [{ email: 'imported-b@example.com' }] },
    });
    expect(imported.status).toBe(202);
    ids.importB = imported.body.data.id;
    // Background work (the import, the domains' first DNS check) settles before fingerprints are taken.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const state = await db.query<{ pending: string }>(
        `SELECT (SELECT count(*) FROM contact_imports WHERE finished_at IS NULL)
              + (SELECT count(*) FROM domains WHERE last_checked_at IS NULL) AS pending`,
      );
      if (Number(state.rows[0].pending) === 0) break;
      if (Date.now() > deadline) throw new Error('background work did not settle');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await ctx?.close();
    await dns?.stop();
  });

  /** Everything a client can change, as one comparable value. */
  async function fingerprint(): Promise<Record<string, string>> {
    const tables: Record<string, string> = {
      projects: 'SELECT id, name, enabled, updated_at FROM projects',
      apiKeys: 'SELECT id, revoked_at FROM api_keys',
      contacts: 'SELECT * FROM contacts',
      events: 'SELECT * FROM events',
      eventNames: 'SELECT project_id, name, shard, count FROM event_name_stats',
      segments: 'SELECT id, project_id, name, description, condition, updated_at FROM segments',
      domains: 'SELECT id, project_id, domain, dkim_selector FROM domains',
      imports: 'SELECT id, project_id, total FROM contact_imports',
    };
    return tableFingerprint(db, tables);
  }

  /** No stack frames, SQL or secrets in any response, error or not. */
  function expectNoLeak(res: InjectResult): void {
    expect(res.raw).not.toMatch(/\n\s+at |\bat [\w.<>]+ \(.*:\d+:\d+\)|node_modules|\.ts:\d+/);
    expect(res.raw).not.toMatch(
      /\bSELECT\b|\bINSERT INTO\b|\bUPDATE "|violates|syntax error at|QueryFailedError|duplicate key/i,
    );
    expect(res.raw).not.toMatch(/-----BEGIN|PRIVATE KEY/);
    for (const secret of [a.secretKey, a.publicKey, b.secretKey, b.publicKey])
      expect(res.raw).not.toContain(secret);
  }

  /** The full error envelope; `fields` lists the exact (field, code) pairs expected in errors[]. */
  function expectError(
    res: InjectResult,
    status: number,
    code: string,
    fields?: FieldIssue[],
  ): void {
    const context = `${status} ${code} expected, got ${res.status} ${res.raw.slice(0, 500)}`;
    expect({ status: res.status, context }).toEqual({ status, context });
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.statusCode).toBe(status);
    expect(typeof res.body.error.message).toBe('string');
    expect(res.body.error.message.length).toBeGreaterThan(0);
    expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
    expect(typeof res.body.error.suggestion).toBe('string');
    expect(res.body.error.suggestion.trim().length).toBeGreaterThan(0);
    expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    if (fields) {
      const got = (res.body.error.errors ?? []).map((e: FieldIssue) => ({
        field: e.field,
        code: e.code,
      }));
      expect(got).toEqual(expect.arrayContaining(fields));
      for (const e of res.body.error.errors ?? []) {
        expect(typeof e.message).toBe('string');
        expect(e.message.length).toBeGreaterThan(0);
      }
    }
    expectNoLeak(res);
  }

  /** Sends a request that must be refused, and checks that nothing changed. */
  async function refused(
    options: Parameters<TestApp['request']>[0],
    status: number,
    code: string,
    fields?: FieldIssue[],
  ): Promise<InjectResult> {
    const before = await fingerprint();
    const res = await app.request({ key: a.secretKey, ...options });
    expectError(res, status, code, fields);
    expect(await fingerprint()).toEqual(before);
    return res;
  }

  /** Several refused requests under one before/after fingerprint (for the big tables). */
  async function allRefused(
    cases: Array<{
      options: Parameters<TestApp['request']>[0];
      status: number;
      code: string;
      fields?: FieldIssue[];
    }>,
  ): Promise<void> {
    const before = await fingerprint();
    for (const c of cases) {
      const res = await app.request({ key: a.secretKey, ...c.options });
      try {
        expectError(res, c.status, c.code, c.fields);
      } catch (error) {
        (error as Error).message =
          `${c.options.method} ${c.options.url} ${JSON.stringify(c.options.body ?? null).slice(0, 200)}\n${(error as Error).message}`;
        throw error;
      }
    }
    expect(await fingerprint()).toEqual(before);
  }

  const importDone = (p: TestProject, id: string) =>
    waitForImport(app, p.secretKey, id, 25_000, 100);

  // ---------------------------------------------------------------- body-level matrix

  interface WriteEndpoint {
    name: string;
    method: 'POST' | 'PATCH' | 'DELETE';
    url: () => string;
    key?: () => string;
    /** Largest accepted body; one byte more must be a 413. */
    limit: number;
    /** Whether the route reads a JSON object body (malformed non-object bodies are then refused). */
    readsBody: boolean;
    /** A body valid except for one unknown top-level key. */
    valid?: () => Record<string, unknown>;
  }

  const endpoints: WriteEndpoint[] = [
    {
      name: 'POST /contacts',
      method: 'POST',
      url: () => '/contacts',
      limit: MB,
      readsBody: true,
      valid: () => ({ email: freshEmail() }),
    },
    {
      name: 'PATCH /contacts/{id}',
      method: 'PATCH',
      url: () => `/contacts/${ids.contactA}`,
      limit: MB,
      readsBody: true,
      valid: () => ({ subscribed: false }),
    },
    {
      name: 'DELETE /contacts/{id}',
      method: 'DELETE',
      url: () => `/contacts/${ids.contactA}`,
      limit: MB,
      readsBody: false,
    },
    {
      name: 'POST /contacts/import',
      method: 'POST',
      url: () => '/contacts/import',
      limit: 10 * MB,
      readsBody: true,
      valid: () => ({ contacts: [{ email: freshEmail() }] }),
    },
    {
      name: 'POST /v1/track (sk)',
      method: 'POST',
      url: () => '/v1/track',
      limit: MB,
      readsBody: true,
      valid: () => ({ email: freshEmail(), event: 'signup' }),
    },
    {
      name: 'POST /v1/track (pk)',
      method: 'POST',
      url: () => '/v1/track',
      key: () => a.publicKey,
      limit: MB,
      readsBody: true,
      valid: () => ({ email: freshEmail(), event: 'signup' }),
    },
    {
      name: 'POST /domains',
      method: 'POST',
      url: () => '/domains',
      limit: MB,
      readsBody: true,
      valid: () => ({ domain: 'never-created.example.com' }),
    },
    {
      name: 'POST /domains/{id}/verify',
      method: 'POST',
      url: () => `/domains/${ids.domainA}/verify`,
      limit: MB,
      readsBody: false,
    },
    {
      name: 'DELETE /domains/{id}',
      method: 'DELETE',
      url: () => `/domains/${ids.domainA}`,
      limit: MB,
      readsBody: false,
    },
    {
      name: 'POST /segments',
      method: 'POST',
      url: () => '/segments',
      limit: MB,
      readsBody: true,
      valid: () => ({ name: 'x', condition: { logic: 'AND', conditions: [] } }),
    },
    {
      name: 'PATCH /segments/{id}',
      method: 'PATCH',
      url: () => `/segments/${ids.segmentA}`,
      limit: MB,
      readsBody: true,
      valid: () => ({ name: 'renamed' }),
    },
    {
      name: 'DELETE /segments/{id}',
      method: 'DELETE',
      url: () => `/segments/${ids.segmentA}`,
      limit: MB,
      readsBody: false,
    },
    {
      name: 'POST /segments/preview',
      method: 'POST',
      url: () => '/segments/preview',
      limit: MB,
      readsBody: true,
      valid: () => ({ condition: { logic: 'AND', conditions: [] } }),
    },
    {
      name: 'PATCH /project',
      method: 'PATCH',
      url: () => '/project',
      limit: MB,
      readsBody: true,
      valid: () => ({ name: 'Renamed' }),
    },
  ];

  describe.each(endpoints)('$name', (ep) => {
    const key = () => (ep.key ? ep.key() : a.secretKey);
    /** This endpoint's request with `body` (and `headers`). */
    const send = (body: unknown, headers?: Record<string, string>) => ({
      method: ep.method,
      url: ep.url(),
      key: key(),
      body,
      headers,
    });
    const badRequest = (body: string, headers?: Record<string, string>) => ({
      options: send(body, headers),
      status: 400,
      code: 'BAD_REQUEST',
    });

    it('refuses malformed JSON, non-object JSON and a wrong content type', async () => {
      const cases: Parameters<typeof allRefused>[0] = [
        badRequest('{"email": "x@example.com",'),
        badRequest('{"a":1}}'),
        badRequest("{'single': 'quotes'}"),
        badRequest('{"a":1}', { 'content-type': 'application/xml' }),
        badRequest('email=x@example.com', { 'content-type': 'text/plain' }),
        badRequest('email=form@example.com&event=signup&name=x&domain=form.example.com', {
          'content-type': 'application/x-www-form-urlencoded',
        }),
        badRequest(
          '--x\r\nContent-Disposition: form-data; name="email"\r\n\r\nmp@example.com\r\n--x--',
          { 'content-type': 'multipart/form-data; boundary=x' },
        ),
      ];
      if (ep.readsBody) {
        for (const body of [
          '[]',
          '[{"email":"x@example.com"}]',
          '"a string"',
          '42',
          'null',
          'true',
        ])
          cases.push(badRequest(body));
      }
      await allRefused(cases);
    });

    it(`answers 413 PAYLOAD_TOO_LARGE over ${ep.limit / MB} MB`, async () => {
      const padding = 'x'.repeat(ep.limit);
      await refused(send(JSON.stringify({ padding })), 413, 'PAYLOAD_TOO_LARGE');
    });

    if (ep.valid) {
      const valid = ep.valid;
      it('rejects an unknown top-level field with 422 unrecognized_keys', async () => {
        await refused(send({ ...valid(), isAdmin: true }), 422, 'VALIDATION_ERROR', [
          { field: 'isAdmin', code: 'unrecognized_keys' },
        ]);
      });

      it('refuses NUL characters and unpaired surrogates in keys and values with 422 invalid_string', async () => {
        await allRefused([
          {
            options: send(JSON.stringify({ ...valid(), ['bad\u0000key']: 1 })),
            status: 422,
            code: 'VALIDATION_ERROR',
          },
          {
            options: send(`{"zzz": "\\ud800", ${JSON.stringify(valid()).slice(1)}`),
            status: 422,
            code: 'VALIDATION_ERROR',
          },
        ]);
      });

      it('refuses JSON nested deeper than 32 levels without crashing', async () => {
        const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
        await refused(
          send(`{"deep": ${deep}, ${JSON.stringify(valid()).slice(1)}`),
          422,
          'VALIDATION_ERROR',
        );
      });
    }

    it('refuses __proto__ and constructor.prototype keys without polluting Object.prototype', async () => {
      await allRefused([
        badRequest('{"__proto__": {"polluted": true}}'),
        badRequest('{"data": {"constructor": {"prototype": {"polluted": true}}}}'),
      ]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  it('accepts a 10 MB route body between 1 and 10 MB (not a 413)', async () => {
    const rows = Array.from({ length: 9_000 }, (_, i) => ({
      email: `big-${i}@example.com`,
      data: { note: 'n'.repeat(200) },
    }));
    const body = JSON.stringify({ contacts: rows });
    expect(body.length).toBeGreaterThan(MB);
    const res = await postImport(app, b.secretKey, body);
    expect(res.status).toBe(202);
    // The worker's writes must not land in the middle of a later test's before/after comparison.
    const done = await importDone(b, res.body.data.id);
    expect(done).toMatchObject({ status: 'COMPLETED', created: 9_000 });
  }, 30_000);

  // ---------------------------------------------------------------- field-level matrices

  it('POST /contacts: wrong types, bad emails, oversized data', async () => {
    const post = (body: unknown) => ({ method: 'POST' as const, url: '/contacts', body });
    const v = 422;
    const E = 'VALIDATION_ERROR';
    await allRefused([
      { options: post({}), status: v, code: E, fields: [{ field: 'email', code: 'required' }] },
      {
        options: post({ email: null }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'required' }],
      },
      {
        options: post({ email: 42 }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_type' }],
      },
      {
        options: post({ email: ['a@example.com'] }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_type' }],
      },
      {
        options: post({ email: { address: 'a@example.com' } }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_type' }],
      },
      {
        options: post({ email: true }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_type' }],
      },
      {
        options: post({ email: 'not-an-email' }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_string' }],
      },
      {
        options: post({ email: 'a@b.com\r\nBcc: victim@example.com' }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_string' }],
      },
      {
        options: post({ email: 'a\r\n@example.com' }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_string' }],
      },
      {
        options: post({ email: 'a\u0000@example.com' }),
        status: v,
        code: E,
        fields: [{ field: 'email', code: 'invalid_string' }],
      },
      { options: post({ email: `${'a'.repeat(64)}@${'b'.repeat(300)}.com` }), status: v, code: E },
      { options: post({ email: 'x'.repeat(100_000) }), status: v, code: E },
      {
        options: post({ email: freshEmail(), subscribed: 'true' }),
        status: v,
        code: E,
        fields: [{ field: 'subscribed', code: 'invalid_type' }],
      },
      {
        options: post({ email: freshEmail(), subscribed: 1 }),
        status: v,
        code: E,
        fields: [{ field: 'subscribed', code: 'invalid_type' }],
      },
    ]);
    await allRefused([
      {
        options: post({ email: freshEmail(), data: [] }),
        status: v,
        code: E,
        fields: [{ field: 'data', code: 'invalid_type' }],
      },
      {
        options: post({ email: freshEmail(), data: 'x' }),
        status: v,
        code: E,
        fields: [{ field: 'data', code: 'invalid_type' }],
      },
      {
        options: post({ email: freshEmail(), data: 42 }),
        status: v,
        code: E,
        fields: [{ field: 'data', code: 'invalid_type' }],
      },
      {
        options: post({ email: freshEmail(), data: { big: 'x'.repeat(65 * 1024) } }),
        status: v,
        code: E,
        fields: [{ field: 'data', code: 'too_big' }],
      },
      {
        options: post({ email: freshEmail(), data: { note: 'nul\u0000byte' } }),
        status: v,
        code: E,
        fields: [{ field: 'data.note', code: 'invalid_string' }],
      },
      {
        options: post({ email: freshEmail(), data: { list: ['ok', 'nul\u0000'] } }),
        status: v,
        code: E,
        fields: [{ field: 'data.list[1]', code: 'invalid_string' }],
      },
      {
        options: post(JSON.parse(`{"email": "${freshEmail()}", "data": {"a": "\\udc00"}}`)),
        status: v,
        code: E,
        fields: [{ field: 'data.a', code: 'invalid_string' }],
      },
      // Over the depth limit, and a 64 KB array nesting that Postgres would refuse with a stack error.
      {
        options: post(
          `{"email": "${freshEmail()}", "data": {"d": ${'{"d":'.repeat(40)}1${'}'.repeat(40)}}}`,
        ),
        status: v,
        code: E,
        fields: [{ field: 'data', code: 'too_big' }],
      },
      {
        options: post(
          `{"email": "${freshEmail()}", "data": {"d": ${'['.repeat(30_000)}${']'.repeat(30_000)}}}`,
        ),
        status: v,
        code: E,
        fields: [{ field: 'data', code: 'too_big' }],
      },
      {
        options: post({ email: freshEmail(), data: { constructor: 'x' } }),
        status: v,
        code: E,
        fields: [{ field: 'data.constructor', code: 'invalid_string' }],
      },
      {
        options: post({ email: freshEmail(), data: { a: [{ prototype: 1 }] } }),
        status: v,
        code: E,
        fields: [{ field: 'data.a[0].prototype', code: 'invalid_string' }],
      },
      { options: post({ email: 'owner-a@example.com' }), status: 409, code: 'CONFLICT' },
      { options: post({ email: '  OWNER-A@Example.COM\r\n' }), status: 409, code: 'CONFLICT' },
    ]);
  });

  it('POST /contacts: trims CR/LF around the email, keeps unicode, emoji and keys named like Object.prototype members', async () => {
    const res = await app.request({
      method: 'POST',
      url: '/contacts',
      key: a.secretKey,
      body: {
        email: '\r\n Emoji-Ünïcode@Example.com \r\n',
        data: {
          name: 'Zoë 🚀 李',
          valueOf: 'x',
          nested: { toString: 1, hasOwnProperty: 2 },
          deep: { a: { b: { c: 1 } } },
        },
      },
    });
    expect(res.status).toBe(201);
    expectNoLeak(res);
    expect(res.body.data.email).toBe('emoji-ünïcode@example.com');
    expect(res.body.data.data).toEqual({
      name: 'Zoë 🚀 李',
      valueOf: 'x',
      nested: { toString: 1, hasOwnProperty: 2 },
      deep: { a: { b: { c: 1 } } },
    });
    const again = await app.request({
      method: 'GET',
      url: `/contacts/${res.body.data.id}`,
      key: a.secretKey,
    });
    expect(again.body.data.data.name).toBe('Zoë 🚀 李');
    expect(({} as Record<string, unknown>).toString).toBe(Object.prototype.toString);
    const removed = await app.request({
      method: 'DELETE',
      url: `/contacts/${res.body.data.id}`,
      key: a.secretKey,
    });
    expect(removed.status).toBe(200);
  });

  it('PATCH /contacts/{id}: wrong types, email is not patchable, nested data problems', async () => {
    const patch = (body: unknown) => ({
      method: 'PATCH' as const,
      url: `/contacts/${ids.contactA}`,
      body,
    });
    await allRefused([
      {
        options: patch({ subscribed: 'false' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'subscribed', code: 'invalid_type' }],
      },
      {
        options: patch({ data: ['a'] }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'data', code: 'invalid_type' }],
      },
      {
        options: patch({ data: null, subscribed: 3 }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'subscribed', code: 'invalid_type' }],
      },
      {
        options: patch({ email: 'new@example.com' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'email', code: 'unrecognized_keys' }],
      },
      {
        options: patch({ id: ids.contactB }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'id', code: 'unrecognized_keys' }],
      },
      {
        options: patch({ data: { k: 'a\u0000' } }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'data.k', code: 'invalid_string' }],
      },
      { options: patch({ data: { 'k\u0000': 1 } }), status: 422, code: 'VALIDATION_ERROR' },
    ]);
  });

  it('POST /contacts/import: JSON envelope problems, CSV problems, rows of another shape', async () => {
    const imp = (body: unknown, headers?: Record<string, string>) => ({
      method: 'POST' as const,
      url: '/contacts/import',
      body,
      headers,
    });
    await allRefused([
      {
        options: imp({}),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts', code: 'required' }],
      },
      {
        options: imp({ contacts: 'a@example.com' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts', code: 'invalid_type' }],
      },
      {
        options: imp({ contacts: { email: 'a@example.com' } }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts', code: 'invalid_type' }],
      },
      {
        options: imp({ contacts: [] }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts', code: 'too_small' }],
      },
      {
        options: imp({
          contacts: Array.from({ length: 10_001 }, (_, i) => ({ email: `r${i}@e.co` })),
        }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts', code: 'too_big' }],
      },
      {
        options: imp({ contacts: [{ email: 'ok@example.com', data: { n: 'a\u0000' } }] }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts[0].data.n', code: 'invalid_string' }],
      },
      {
        options: imp('email,name\nok@example.com,Zo\u0000e\n', { 'content-type': 'text/csv' }),
        status: 422,
        code: 'VALIDATION_ERROR',
      },
      {
        options: imp('', { 'content-type': 'text/csv' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'email', code: 'required' }],
      },
      {
        options: imp('email,constructor\nok@example.com,x\n', { 'content-type': 'text/csv' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'constructor', code: 'invalid_string' }],
      },
      {
        options: imp({ contacts: [{ email: 'ok@example.com', data: { prototype: 1 } }] }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'contacts[0].data.prototype', code: 'invalid_string' }],
      },
      {
        options: imp('name,plan\nAda,pro\n', { 'content-type': 'text/csv' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'email', code: 'required' }],
      },
      {
        options: imp('email\n', { 'content-type': 'text/csv' }),
        status: 422,
        code: 'VALIDATION_ERROR',
      },
      {
        options: imp('email,name\n"unterminated,x\n', { 'content-type': 'text/csv' }),
        status: 400,
        code: 'BAD_REQUEST',
      },
      {
        options: imp('email\n' + 'x'.repeat(10 * MB), { 'content-type': 'text/csv' }),
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
      },
      {
        options: imp('{"contacts":[]}', { 'content-type': 'text/plain' }),
        status: 400,
        code: 'BAD_REQUEST',
      },
    ]);
  });

  it('POST /contacts/import: bad rows are reported per row and never crash the worker', async () => {
    const rows = [
      { email: 'row-ok@example.com', data: { name: 'Zoë 🚀', toString: 'c' } },
      { email: 'a@b.com\r\nBcc: x@y.z' },
      { email: 42 },
      { email: 'row-2@example.com', subscribed: 'yes' },
      { email: 'row-3@example.com', data: [] },
      { email: 'row-4@example.com', extra: 1 },
      'not an object',
      null,
    ];
    const res = await postImport(app, a.secretKey, { contacts: rows });
    expect(res.status).toBe(202);
    expectNoLeak(res);
    const job = await importDone(a, res.body.data.id);
    expect(job).toMatchObject({ status: 'COMPLETED', total: 8, created: 1, failed: 7 });
    expect(
      (job.errors as Array<{ row: number; field: string; code: string }>).map((e) => [
        e.row,
        e.field,
        e.code,
      ]),
    ).toEqual([
      [2, 'email', 'invalid_string'],
      [3, 'email', 'invalid_type'],
      [4, 'subscribed', 'invalid_type'],
      [5, 'data', 'invalid_type'],
      [6, 'extra', 'unrecognized_keys'],
      [7, '', 'invalid_type'],
      [8, '', 'invalid_type'],
    ]);
    const csv = await postImport(
      app,
      a.secretKey,
      'email,toString,valueOf,name\ncsv-row@example.com,t,v,"multi\r\nline, 🚀"\n',
      {
        'content-type': 'text/csv',
      },
    );
    expect(csv.status).toBe(202);
    expect(await importDone(a, csv.body.data.id)).toMatchObject({
      status: 'COMPLETED',
      created: 1,
      failed: 0,
    });
    const row = await app.request({
      method: 'GET',
      url: '/contacts?email=csv-row@example.com',
      key: a.secretKey,
    });
    expect(row.body.data.items[0].data).toEqual({
      toString: 't',
      valueOf: 'v',
      name: 'multi\r\nline, 🚀',
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('POST /v1/track: wrong types, reserved and control-character event names, both key types', async () => {
    for (const key of [a.secretKey, a.publicKey]) {
      const track = (body: unknown) => ({ method: 'POST' as const, url: '/v1/track', key, body });
      const email = freshEmail();
      await allRefused([
        {
          options: track({ event: 'signup' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'email', code: 'required' }],
        },
        {
          options: track({ email }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'required' }],
        },
        {
          options: track({ email: 7, event: 'signup' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'email', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: 42 }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: ['signup'] }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: { name: 'signup' } }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: '' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'too_small' }],
        },
        {
          options: track({ email, event: 'e'.repeat(101) }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'too_big' }],
        },
        {
          options: track({ email, event: 'email.sent' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'reserved_event' }],
        },
        {
          options: track({ email, event: 'Contact.Subscribed' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'reserved_event' }],
        },
        {
          options: track({ email, event: 'sign\r\nup' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_string' }],
        },
        {
          options: track({ email, event: 'signup\n' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_string' }],
        },
        {
          options: track({ email, event: 'sign\u0000up' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_string' }],
        },
        {
          options: track({ email, event: 'sign\tup' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'event', code: 'invalid_string' }],
        },
        {
          options: track({ email: 'a@b.com\nX: y', event: 'signup' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'email', code: 'invalid_string' }],
        },
        {
          options: track({ email, event: 'signup', subscribed: 'no' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'subscribed', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: 'signup', data: [1] }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'data', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: 'signup', data: 'x' }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'data', code: 'invalid_type' }],
        },
        {
          options: track({ email, event: 'signup', data: { x: 'y'.repeat(65 * 1024) } }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'data', code: 'too_big' }],
        },
        {
          options: track({
            email,
            event: 'signup',
            data: { v: { value: 'a\u0000', persistent: false } },
          }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'data.v.value', code: 'invalid_string' }],
        },
        {
          options: track({ email, event: 'signup', contactId: ids.contactB }),
          status: 422,
          code: 'VALIDATION_ERROR',
          fields: [{ field: 'contactId', code: 'unrecognized_keys' }],
        },
      ]);
    }
  });

  it('POST /v1/track: unicode event names and emoji data are stored exactly', async () => {
    const res = await app.request({
      method: 'POST',
      url: '/v1/track',
      key: a.publicKey,
      body: {
        email: 'unicode-track@example.com',
        event: 'achat terminé 🛒',
        data: { clé: 'välue 🚀', toString: 'c' },
      },
    });
    expect(res.status).toBe(200);
    expectNoLeak(res);
    const events = await app.request({
      method: 'GET',
      url: `/events?name=${encodeURIComponent('achat terminé 🛒')}`,
      key: a.secretKey,
    });
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0].data).toEqual({ clé: 'välue 🚀', toString: 'c' });
  });

  it('POST /domains: wrong types, CR/LF and NUL, schemes, oversized names', async () => {
    const create = (body: unknown) => ({ method: 'POST' as const, url: '/domains', body });
    const f = (code: string) => [{ field: 'domain', code }];
    await allRefused([
      { options: create({}), status: 422, code: 'VALIDATION_ERROR', fields: f('required') },
      {
        options: create({ domain: 42 }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_type'),
      },
      {
        options: create({ domain: ['example.com'] }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_type'),
      },
      {
        options: create({ domain: { name: 'example.com' } }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_type'),
      },
      {
        options: create({ domain: 'evil.example.com\r\nX-Injected: 1' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_string'),
      },
      {
        options: create({ domain: 'evil\n.example.com' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_string'),
      },
      {
        options: create({ domain: 'evil\u0000.example.com' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_string'),
      },
      {
        options: create({ domain: 'https://example.com/path' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_string'),
      },
      { options: create({ domain: '' }), status: 422, code: 'VALIDATION_ERROR' },
      {
        options: create({ domain: 'com' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_string'),
      },
      {
        options: create({ domain: '127.0.0.1' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('invalid_string'),
      },
      {
        options: create({ domain: `${'a'.repeat(63)}.`.repeat(5) + 'com' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('too_big'),
      },
      {
        options: create({ domain: 'x'.repeat(200_000) }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: f('too_big'),
      },
      { options: create({ domain: '🚀🚀🚀' }), status: 422, code: 'VALIDATION_ERROR' },
      { options: create({ domain: 'bad-input-a.example.com' }), status: 409, code: 'CONFLICT' },
      {
        options: create({ domain: ' BAD-INPUT-A.Example.com\r\n' }),
        status: 409,
        code: 'CONFLICT',
      },
    ]);
  });

  it('POST /domains: a created domain never shows the DKIM private key; GET /project never shows a key', async () => {
    const created = await app.request({
      method: 'POST',
      url: '/domains',
      key: b.secretKey,
      body: { domain: 'bücher-bad-input.example' },
    });
    expect([201, 422]).toContain(created.status);
    expectNoLeak(created);
    const listed = await app.request({ method: 'GET', url: '/domains', key: b.secretKey });
    expectNoLeak(listed);
    expect(listed.raw).not.toMatch(/sealed|privateKey/i);
    const project = await app.request({ method: 'GET', url: '/project', key: a.secretKey });
    expectNoLeak(project);
    const keys = await app.request({ method: 'GET', url: '/project/keys', key: a.secretKey });
    expect(keys.status).toBe(200);
    expectNoLeak(keys);
    expect(keys.raw).not.toMatch(/"hash"/);
  });

  it('POST /segments and /segments/preview, PATCH /segments/{id}: types, names, condition paths', async () => {
    const cond = {
      logic: 'AND',
      conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
    };
    const create = (body: unknown) => ({ method: 'POST' as const, url: '/segments', body });
    const patch = (body: unknown) => ({
      method: 'PATCH' as const,
      url: `/segments/${ids.segmentA}`,
      body,
    });
    const preview = (body: unknown) => ({
      method: 'POST' as const,
      url: '/segments/preview',
      body,
    });
    const V = 'VALIDATION_ERROR';
    await allRefused([
      {
        options: create({ condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'required' }],
      },
      {
        options: create({ name: 'x' }),
        status: 422,
        code: V,
        fields: [{ field: 'condition', code: 'required' }],
      },
      {
        options: create({ name: 42, condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'invalid_type' }],
      },
      {
        options: create({ name: ['n'], condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'invalid_type' }],
      },
      {
        options: create({ name: '   ', condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'too_small' }],
      },
      {
        options: create({ name: 'n'.repeat(201), condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'too_big' }],
      },
      {
        options: create({ name: 'n\u0000', condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'invalid_string' }],
      },
      {
        options: create({ name: 'n', description: 5, condition: cond }),
        status: 422,
        code: V,
        fields: [{ field: 'description', code: 'invalid_type' }],
      },
      { options: create({ name: 'n', condition: 'data.plan = pro' }), status: 422, code: V },
      { options: create({ name: 'n', condition: [cond] }), status: 422, code: V },
      {
        options: create({ name: 'n', condition: { logic: 'XOR', conditions: [] } }),
        status: 422,
        code: V,
        fields: [{ field: 'condition.logic', code: 'invalid_enum_value' }],
      },
      {
        options: create({
          name: 'n',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro', extra: 1 }],
          },
        }),
        status: 422,
        code: V,
        fields: [{ field: 'condition.conditions[0].extra', code: 'unrecognized_keys' }],
      },
      {
        options: create({
          name: 'n',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro\u0000' }],
          },
        }),
        status: 422,
        code: V,
        fields: [{ field: 'condition.conditions[0].value', code: 'invalid_string' }],
      },
      {
        options: create({
          name: 'n',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'segment', operator: 'in', value: ids.segmentB }],
          },
        }),
        status: 422,
        code: V,
        fields: [{ field: 'condition.conditions[0].value', code: 'custom' }],
      },
      {
        options: create({
          name: 'n',
          condition: {
            logic: 'AND',
            conditions: [
              {
                field: 'event.x',
                operator: 'triggeredWithin',
                value: { amount: 'x', unit: 'days' },
              },
            ],
          },
        }),
        status: 422,
        code: V,
      },
      {
        options: patch({ name: 7 }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'invalid_type' }],
      },
      { options: patch({ condition: null }), status: 422, code: V },
      {
        options: patch({
          condition: {
            logic: 'AND',
            conditions: [{ field: 'segment', operator: 'in', value: ids.segmentA }],
          },
        }),
        status: 422,
        code: V,
      },
      {
        options: patch({ memberCount: 5 }),
        status: 422,
        code: V,
        fields: [{ field: 'memberCount', code: 'unrecognized_keys' }],
      },
      {
        options: preview({}),
        status: 422,
        code: V,
        fields: [{ field: 'condition', code: 'required' }],
      },
      { options: preview({ condition: 7 }), status: 422, code: V },
      {
        options: preview({ condition: cond, name: 'x' }),
        status: 422,
        code: V,
        fields: [{ field: 'name', code: 'unrecognized_keys' }],
      },
      {
        options: preview({
          condition: {
            logic: 'AND',
            conditions: [{ field: 'email', operator: 'in', value: ['a\u0000'] }],
          },
        }),
        status: 422,
        code: V,
      },
    ]);
  });

  it('segments: prototype-named data keys in a condition are plain keys', async () => {
    // Keys no contact holds (the refused ones): each is looked up in the stored JSON, never on a JS prototype.
    for (const key of [
      '__proto__',
      'constructor',
      'prototype',
      'constructor.prototype',
      '__proto__.polluted',
    ]) {
      const res = await app.request({
        method: 'POST',
        url: '/segments/preview',
        key: a.secretKey,
        body: {
          condition: { logic: 'AND', conditions: [{ field: `data.${key}`, operator: 'exists' }] },
        },
      });
      expectNoLeak(res);
      expect({ key, status: res.status }).toEqual({ key, status: 200 });
      expect(res.body.data.count).toBe(0);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('segments: CR/LF and emoji in names are stored as display text', async () => {
    const res = await app.request({
      method: 'POST',
      url: '/segments',
      key: a.secretKey,
      body: {
        name: 'Line one\r\nline two 🚀',
        description: 'Zoë',
        condition: { logic: 'OR', conditions: [] },
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.name).toBe('Line one\r\nline two 🚀');
    const removed = await app.request({
      method: 'DELETE',
      url: `/segments/${res.body.data.id}`,
      key: a.secretKey,
    });
    expect(removed.status).toBe(200);
  });

  it('PATCH /project: wrong types, empty and oversized names', async () => {
    const patch = (body: unknown) => ({ method: 'PATCH' as const, url: '/project', body });
    await allRefused([
      {
        options: patch({}),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'name', code: 'required' }],
      },
      {
        options: patch({ name: 5 }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'name', code: 'invalid_type' }],
      },
      {
        options: patch({ name: {} }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'name', code: 'invalid_type' }],
      },
      {
        options: patch({ name: '' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'name', code: 'too_small' }],
      },
      {
        options: patch({ name: 'p'.repeat(201) }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'name', code: 'too_big' }],
      },
      {
        options: patch({ name: 'p\u0000' }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'name', code: 'invalid_string' }],
      },
      {
        options: patch({ name: 'ok', enabled: false }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'enabled', code: 'unrecognized_keys' }],
      },
      {
        options: patch({ name: 'ok', id: b.id }),
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: [{ field: 'id', code: 'unrecognized_keys' }],
      },
    ]);
  });

  // ---------------------------------------------------------------- path ids

  const idRoutes: Array<{
    method: 'GET' | 'PATCH' | 'DELETE' | 'POST';
    path: string;
    resource: string;
    body?: unknown;
    other: () => string;
  }> = [
    { method: 'GET', path: '/contacts/{id}', resource: 'CONTACT', other: () => ids.contactB },
    {
      method: 'PATCH',
      path: '/contacts/{id}',
      resource: 'CONTACT',
      body: { subscribed: false },
      other: () => ids.contactB,
    },
    { method: 'DELETE', path: '/contacts/{id}', resource: 'CONTACT', other: () => ids.contactB },
    { method: 'GET', path: '/contacts/imports/{id}', resource: 'IMPORT', other: () => ids.importB },
    { method: 'GET', path: '/domains/{id}', resource: 'DOMAIN', other: () => ids.domainB },
    { method: 'POST', path: '/domains/{id}/verify', resource: 'DOMAIN', other: () => ids.domainB },
    { method: 'DELETE', path: '/domains/{id}', resource: 'DOMAIN', other: () => ids.domainB },
    { method: 'GET', path: '/segments/{id}', resource: 'SEGMENT', other: () => ids.segmentB },
    {
      method: 'PATCH',
      path: '/segments/{id}',
      resource: 'SEGMENT',
      body: { name: 'stolen' },
      other: () => ids.segmentB,
    },
    { method: 'DELETE', path: '/segments/{id}', resource: 'SEGMENT', other: () => ids.segmentB },
    {
      method: 'GET',
      path: '/segments/{id}/contacts',
      resource: 'SEGMENT',
      other: () => ids.segmentB,
    },
  ];

  it.each(idRoutes)(
    '$method $path: non-UUID → 400 "id", unknown and another project\'s id → 404',
    async (route) => {
      const url = (id: string) => route.path.replace('{id}', id);
      const cases: Parameters<typeof allRefused>[0] = [];
      for (const bad of [
        'not-a-uuid',
        '123',
        "1'%20OR%20'1'='1",
        '0190a000-0000-7000-8000-00000000000g',
        '%00',
        `${UNKNOWN_UUID}x`,
      ]) {
        cases.push({
          options: { method: route.method, url: url(bad), body: route.body },
          status: 400,
          code: 'BAD_REQUEST',
          fields: [{ field: 'id', code: 'invalid_string' }],
        });
      }
      cases.push({
        options: { method: route.method, url: url(UNKNOWN_UUID), body: route.body },
        status: 404,
        code: `${route.resource}_NOT_FOUND`,
      });
      cases.push({
        options: { method: route.method, url: url(route.other()), body: route.body },
        status: 404,
        code: `${route.resource}_NOT_FOUND`,
      });
      cases.push({
        options: { method: route.method, url: url(route.other().toUpperCase()), body: route.body },
        status: 404,
        code: `${route.resource}_NOT_FOUND`,
      });
      await allRefused(cases);
      // The other project still sees its resource unchanged.
      const getUrl = route.path.startsWith('/segments/{id}/')
        ? `/segments/${route.other()}`
        : url(route.other()).replace('/verify', '');
      const own = await app.request({ method: 'GET', url: getUrl, key: b.secretKey });
      expect(own.status).toBe(200);
    },
  );

  // ---------------------------------------------------------------- query parameters

  it('list query parameters out of range or malformed are 400 naming the parameter', async () => {
    const lists = [
      '/contacts',
      '/events',
      '/events/names',
      '/domains',
      '/segments',
      `/segments/${ids.segmentA}/contacts`,
      '/project/keys',
    ];
    const cases: Parameters<typeof allRefused>[0] = [];
    for (const list of lists) {
      for (const limit of ['0', '101', 'abc', '1.5', '-1', '1e2', '']) {
        cases.push({
          options: { method: 'GET', url: `${list}?limit=${limit}` },
          status: 400,
          code: 'BAD_REQUEST',
          fields: [{ field: 'limit', code: expect.any(String) as unknown as string }],
        });
      }
      for (const cursor of ['garbage', '!!!', 'djE6bm90LWEtdXVpZA', 'x'.repeat(300)]) {
        cases.push({
          options: { method: 'GET', url: `${list}?cursor=${cursor}` },
          status: 400,
          code: 'BAD_REQUEST',
          fields: [{ field: 'cursor', code: expect.any(String) as unknown as string }],
        });
      }
    }
    const s = (url: string, field: string) => ({
      options: { method: 'GET' as const, url },
      status: 400,
      code: 'BAD_REQUEST',
      fields: [{ field, code: expect.any(String) as unknown as string }],
    });
    cases.push(
      s('/contacts?subscribed=maybe', 'subscribed'),
      s(`/contacts?search=${'s'.repeat(400)}`, 'search'),
      s('/events?since=not-a-date', 'since'),
      s('/events?until=2024-13-45', 'until'),
      s('/events?contactId=nope', 'contactId'),
      s(`/events?name=${'n'.repeat(101)}`, 'name'),
      s('/domains?status=MAYBE', 'status'),
      s('/contacts?search=a%00b', 'search'),
      s('/contacts?email=a%00@example.com', 'email'),
      s('/events?name=sign%00up', 'name'),
    );
    await allRefused(cases);
  });

  it('a cursor of another list does not decode on the events lists', async () => {
    for (let i = 0; i < 2; i++) {
      await app.request({
        method: 'POST',
        url: '/contacts',
        key: a.secretKey,
        body: { email: `cursor-${i}@example.com` },
      });
    }
    const contacts = await app.request({
      method: 'GET',
      url: '/contacts?limit=1',
      key: a.secretKey,
    });
    const contactCursor = contacts.body.data.nextCursor as string;
    expect(contactCursor).toEqual(expect.any(String));
    await app.request({
      method: 'POST',
      url: '/v1/track',
      key: a.secretKey,
      body: { email: 'cursor-0@example.com', event: 'other' },
    });
    const events = await app.request({ method: 'GET', url: '/events?limit=1', key: a.secretKey });
    const eventCursor = events.body.data.nextCursor as string;
    const names = await app.request({
      method: 'GET',
      url: '/events/names?limit=1',
      key: a.secretKey,
    });
    const nameCursor = names.body.data.nextCursor as string;
    const cursorError = [{ field: 'cursor', code: 'invalid_string' }];
    await allRefused([
      {
        options: { method: 'GET', url: `/events?cursor=${contactCursor}` },
        status: 400,
        code: 'BAD_REQUEST',
        fields: cursorError,
      },
      {
        options: { method: 'GET', url: `/events/names?cursor=${contactCursor}` },
        status: 400,
        code: 'BAD_REQUEST',
        fields: cursorError,
      },
      {
        options: { method: 'GET', url: `/events?cursor=${nameCursor}` },
        status: 400,
        code: 'BAD_REQUEST',
        fields: cursorError,
      },
      {
        options: { method: 'GET', url: `/contacts?cursor=${eventCursor}` },
        status: 400,
        code: 'BAD_REQUEST',
        fields: cursorError,
      },
      {
        options: { method: 'GET', url: `/segments?cursor=${nameCursor}` },
        status: 400,
        code: 'BAD_REQUEST',
        fields: cursorError,
      },
    ]);
    // Well-formed cursors whose time Postgres cannot add to the epoch.
    const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
    const uuid = '00000000-0000-4000-8000-000000000000';
    const name = b64('signup');
    const crafted = [
      `/events?cursor=${b64(`e1:9223372036854775807:${uuid}`)}`,
      `/events?cursor=${b64(`e1:-9223372036854775808:${uuid}`)}`,
      `/events?cursor=${b64(`e1:9999999999999999999:${uuid}`)}`,
      `/events/names?cursor=${b64(`n1:9223372036854775807:${name}`)}`,
      `/events/names?cursor=${b64(`n1:-9223372036854775000:${name}`)}`,
    ];
    await allRefused(
      crafted.map((url) => ({
        options: { method: 'GET' as const, url },
        status: 400,
        code: 'BAD_REQUEST',
        fields: cursorError,
      })),
    );
  });

  it('edge values in filters and conditions never answer 500', async () => {
    const rule = (field: string, operator: string, value?: unknown) => ({
      condition: {
        logic: 'AND',
        conditions: [value === undefined ? { field, operator } : { field, operator, value }],
      },
    });
    const previews = [
      rule('email', 'contains', '\\'),
      rule('email', 'startsWith', '%_\\'),
      rule('data.name', 'endsWith', '\\'),
      rule('data.age', 'greaterThan', 1e308),
      rule('data.age', 'lessThan', -1e308),
      rule('data.age', 'equals', 0.1),
      rule('createdAt', 'greaterThan', '0000-01-01T00:00:00Z'),
      rule('createdAt', 'lessThan', '9999-12-31T23:59:59Z'),
      rule('createdAt', 'greaterThan', '+275760-09-13T00:00:00Z'),
      rule('createdAt', 'within', { amount: 1e15, unit: 'days' }),
      rule('createdAt', 'olderThan', { amount: 2 ** 53, unit: 'minutes' }),
      rule('data.signup', 'within', { amount: -1, unit: 'days' }),
      rule('event.signup', 'triggeredWithin', { amount: 1e12, unit: 'hours' }),
      rule('event.signup', 'triggeredAtLeast', { count: 2 ** 40 }),
      rule('event.signup', 'triggeredAtLeast', { count: 1.5 }),
      rule('email.opened', 'notTriggeredWithin', { amount: 0, unit: 'days' }),
      rule('data.a.b.c.d.e.f.g.h', 'exists'),
      rule(`data.${'k'.repeat(5000)}`, 'exists'),
      rule(`event.${'e'.repeat(5000)}`, 'triggered'),
      rule(
        'data.tags',
        'in',
        Array.from({ length: 5000 }, (_, i) => `t${i}`),
      ),
      rule('data.tags', 'in', [[1], { a: 1 }, null]),
      rule('subscribed', 'equals', 'yes'),
      rule('segment', 'in', 'not-a-uuid'),
      rule('segment', 'in', UNKNOWN_UUID.toUpperCase()),
    ];
    const before = await fingerprint();
    for (const body of previews) {
      const res = await app.request({
        method: 'POST',
        url: '/segments/preview',
        key: a.secretKey,
        body,
      });
      expectNoLeak(res);
      expect({ body, status: res.status }).toEqual({
        body,
        status: res.status === 422 ? 422 : 200,
      });
      if (res.status === 422) expectError(res, 422, 'VALIDATION_ERROR');
    }
    const gets = [
      '/contacts?search=%5C',
      '/contacts?search=%25_%5C',
      '/contacts?email=%5C',
      '/contacts?limit=1&limit=2',
      '/contacts?cursor=a&cursor=b',
      '/contacts?subscribed=true&subscribed=false',
      '/events?since=0000-01-01T00:00:00Z',
      '/events?since=9999-12-31T23:59:59Z&until=0001-01-01T00:00:00Z',
      '/events?since=%2B275760-09-13T00:00:00Z',
      '/events?since=2024-02-30T00:00:00Z',
      '/events?since=2024-01-01T24:00:00Z',
      '/events?until=2024-01-01T00:00:00.123456789Z',
      '/events?name=%5C',
      `/events?contactId=${UNKNOWN_UUID}`,
      '/domains?status=verified',
    ];
    for (const url of gets) {
      const res = await app.request({ method: 'GET', url, key: a.secretKey });
      expectNoLeak(res);
      expect({ url, status: res.status }).toEqual({ url, status: res.status === 400 ? 400 : 200 });
      if (res.status === 400) expectError(res, 400, 'BAD_REQUEST');
    }
    expect(await fingerprint()).toEqual(before);
  });

  // ---------------------------------------------------------------- headers

  it('X-Request-Id with CR/LF or oversize is replaced, never echoed; a sane one is echoed', async () => {
    const sane = await app.request({
      method: 'POST',
      url: '/contacts',
      key: a.secretKey,
      body: '{',
      headers: { 'x-request-id': 'client-req-1' },
    });
    expectError(sane, 400, 'BAD_REQUEST');
    expect(sane.body.error.requestId).toBe('client-req-1');
    for (const bad of ['x'.repeat(300), 'id with spaces', 'a<script>']) {
      const res = await app.request({
        method: 'POST',
        url: '/contacts',
        key: a.secretKey,
        body: '{',
        headers: { 'x-request-id': bad },
      });
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.body.error.requestId).not.toBe(bad);
    }
  });

  it('auth failures use the envelope too; a pk key is refused on every write but /v1/track', async () => {
    const cases: Parameters<typeof allRefused>[0] = [
      {
        options: { method: 'POST', url: '/contacts', key: null, body: { email: freshEmail() } },
        status: 401,
        code: 'MISSING_API_KEY',
      },
      {
        options: {
          method: 'POST',
          url: '/contacts',
          key: 'sk_nope',
          body: { email: freshEmail() },
        },
        status: 401,
        code: 'INVALID_API_KEY',
      },
      {
        options: {
          method: 'POST',
          url: '/contacts',
          key: null,
          body: { email: freshEmail() },
          headers: { authorization: 'Basic abc' },
        },
        status: 401,
        code: 'MISSING_API_KEY',
      },
    ];
    for (const ep of endpoints.filter((e) => !e.url().startsWith('/v1/track'))) {
      cases.push({
        options: {
          method: ep.method,
          url: ep.url(),
          key: a.publicKey,
          body: ep.valid ? ep.valid() : undefined,
        },
        status: 403,
        code: 'FORBIDDEN',
      });
    }
    await allRefused(cases);
  });
});
