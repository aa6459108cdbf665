import { DataSource } from 'typeorm';
import { ProjectsService } from '../src/projects/projects.service';
import { InjectResult, setupTestApp, TestApp, TestProject } from './support/test-app';

/** Every error response must carry the contract's envelope, field by field. */
function expectEnvelope(res: InjectResult, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.statusCode).toBe(status);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expect(res.body.error.suggestion.length).toBeGreaterThan(0);
  expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
  expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
  expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+|SELECT |INSERT /);
}

describe('service foundation (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    project = await app.createProject('Acme');
  });
  afterAll(() => ctx.close());

  describe('authentication matrix', () => {
    it('no Authorization header: 401 MISSING_API_KEY', async () => {
      expectEnvelope(await app.request({ method: 'GET', url: '/project' }), 401, 'MISSING_API_KEY');
    });

    it('malformed header: 401 MISSING_API_KEY', async () => {
      for (const header of ['Basic abc', 'Bearer', 'Bearer  ', project.secretKey]) {
        const res = await app.request({
          method: 'GET',
          url: '/project',
          headers: { authorization: header },
        });
        expectEnvelope(res, 401, 'MISSING_API_KEY');
      }
    });

    it('unknown or malformed key: 401 INVALID_API_KEY', async () => {
      for (const key of ['sk_' + 'A'.repeat(32), 'sk_short', 'nope_' + 'x'.repeat(30)]) {
        expectEnvelope(
          await app.request({ method: 'GET', url: '/project', key }),
          401,
          'INVALID_API_KEY',
        );
      }
    });

    it('valid sk_ key: 200 with the project and rate-limit headers', async () => {
      const res = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        data: expect.objectContaining({ id: project.id, name: 'Acme', enabled: true }),
      });
      expect(res.headers['ratelimit-limit']).toBe('1000');
      expect(Number(res.headers['ratelimit-remaining'])).toBeLessThan(1000);
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
    });

    it('pk_ key on a secret-only route: 403 FORBIDDEN', async () => {
      expectEnvelope(
        await app.request({ method: 'GET', url: '/project', key: project.publicKey }),
        403,
        'FORBIDDEN',
      );
    });

    it('revoked key: 401 INVALID_API_KEY, other keys of the project keep working', async () => {
      const projects = app.app.get(ProjectsService);
      const extra = await projects.createKey(project.id, 'SECRET' as never);
      expect(
        (await app.request({ method: 'GET', url: '/project', key: extra.apiKey })).status,
      ).toBe(200);
      await projects.revokeKey(extra.key.id);
      expectEnvelope(
        await app.request({ method: 'GET', url: '/project', key: extra.apiKey }),
        401,
        'INVALID_API_KEY',
      );
      expect(
        (await app.request({ method: 'GET', url: '/project', key: project.secretKey })).status,
      ).toBe(200);
    });

    it('disabled project: 403 PROJECT_DISABLED for both key types, enabled again works', async () => {
      const other = await app.createProject('Disabled Co');
      const projects = app.app.get(ProjectsService);
      await projects.setEnabled(other.id, false);
      expectEnvelope(
        await app.request({ method: 'GET', url: '/project', key: other.secretKey }),
        403,
        'PROJECT_DISABLED',
      );
      expectEnvelope(
        await app.request({ method: 'GET', url: '/project', key: other.publicKey }),
        403,
        'PROJECT_DISABLED',
      );
      await projects.setEnabled(other.id, true);
      expect(
        (await app.request({ method: 'GET', url: '/project', key: other.secretKey })).status,
      ).toBe(200);
    });

    it('routes marked public need no key', async () => {
      expect((await app.request({ method: 'GET', url: '/health/live' })).status).toBe(200);
      const ready = await app.request({ method: 'GET', url: '/health/ready' });
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ok', checks: { postgres: 'up', redis: 'up' } });
      const openapi = await app.request({ method: 'GET', url: '/openapi.json' });
      expect(openapi.status).toBe(200);
      expect(openapi.body.openapi).toMatch(/^3\./);
      expect(openapi.body.paths['/project']).toBeDefined();
      expect((await app.request({ method: 'GET', url: '/docs' })).status).toBe(200);
    });
  });

  describe('error envelope', () => {
    it('400 BAD_REQUEST for malformed JSON, and nothing changes', async () => {
      const res = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: '{"name": "x",',
      });
      expectEnvelope(res, 400, 'BAD_REQUEST');
      const after = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
      expect(after.body.data.name).toBe('Acme');
    });

    it('400 BAD_REQUEST for a wrong content type', async () => {
      const res = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: '<name>x</name>',
        headers: { 'content-type': 'application/xml' },
      });
      expectEnvelope(res, 400, 'BAD_REQUEST');
    });

    it('400 BAD_REQUEST for a body that is not an object', async () => {
      const res = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: '[1,2]',
      });
      expectEnvelope(res, 400, 'BAD_REQUEST');
    });

    it('400 BAD_REQUEST naming the query parameter', async () => {
      for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=not-a-cursor']) {
        const res = await app.request({
          method: 'GET',
          url: `/project/keys?${q}`,
          key: project.secretKey,
        });
        expectEnvelope(res, 400, 'BAD_REQUEST');
        expect(res.body.error.errors[0].field).toBe(q.split('=')[0]);
      }
    });

    it('404 ROUTE_NOT_FOUND for an unknown path, with or without a key', async () => {
      expectEnvelope(await app.request({ method: 'GET', url: '/nope' }), 404, 'ROUTE_NOT_FOUND');
      expectEnvelope(
        await app.request({ method: 'DELETE', url: '/project', key: project.secretKey }),
        404,
        'ROUTE_NOT_FOUND',
      );
    });

    it('413 PAYLOAD_TOO_LARGE over 1 MB', async () => {
      const res = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }),
      });
      expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
    });

    it('422 VALIDATION_ERROR with field-level errors, unknown fields refused, nothing changes', async () => {
      const res = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: { name: 42, owner: 'me' },
      });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors).toEqual(
        expect.arrayContaining([
          { field: 'name', code: 'invalid_type', message: expect.any(String) },
          { field: 'owner', code: 'unrecognized_keys', message: expect.any(String) },
        ]),
      );
      const missing = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: {},
      });
      expect(missing.body.error.errors).toEqual([
        { field: 'name', code: 'required', message: expect.any(String) },
      ]);
      const after = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
      expect(after.body.data.name).toBe('Acme');
    });

    it('keeps a sane caller X-Request-Id and replaces an unsafe one', async () => {
      const res = await app.request({
        method: 'GET',
        url: '/nope',
        headers: { 'x-request-id': 'trace-123.abc' },
      });
      expect(res.headers['x-request-id']).toBe('trace-123.abc');
      expect(res.body.error.requestId).toBe('trace-123.abc');
      const unsafe = await app.request({
        method: 'GET',
        url: '/nope',
        headers: { 'x-request-id': 'a b<script>' },
      });
      expect(unsafe.headers['x-request-id']).not.toBe('a b<script>');
      expect(unsafe.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('success responses carry the request id too', async () => {
      const res = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('pagination', () => {
    it('walks 45 rows with limit=20: every row exactly once, newest first', async () => {
      const paged = await app.createProject('Paged');
      const projects = app.app.get(ProjectsService);
      for (let i = 0; i < 43; i++)
        await projects.createKey(paged.id, i % 2 ? ('PUBLIC' as never) : ('SECRET' as never));
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const url: string = `/project/keys?limit=20${cursor ? `&cursor=${cursor}` : ''}`;
        const res = await app.request({ method: 'GET', url, key: paged.secretKey });
        expect(res.status).toBe(200);
        expect(res.body.data.total).toBe(45);
        seen.push(...res.body.data.items.map((k: { id: string }) => k.id));
        cursor = res.body.data.nextCursor;
        expect(res.body.data.hasMore).toBe(cursor !== null);
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toHaveLength(45);
      expect(new Set(seen).size).toBe(45);
      expect([...seen].sort().reverse()).toEqual(seen);
    });
  });
});

describe('unexpected failures (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;

  beforeAll(async () => {
    ctx = await setupTestApp();
  });
  afterAll(() => ctx.close());

  it('500 INTERNAL_ERROR: generic message, the envelope, no SQL or stack, when the database breaks underneath', async () => {
    const project = await ctx.app.createProject('Broken');
    // Break the schema under the running app: any query on contacts now fails in Postgres.
    const dataSource = ctx.app.app.get(DataSource);
    await dataSource.query('ALTER TABLE contacts RENAME TO contacts_gone');
    try {
      const res = await ctx.app.request({
        method: 'GET',
        url: '/contacts',
        key: project.secretKey,
      });
      expectEnvelope(res, 500, 'INTERNAL_ERROR');
      expect(res.body.error.message).toBe('An unexpected error occurred');
      expect(res.raw).not.toMatch(/contacts|relation|does not exist|QueryFailedError/i);
    } finally {
      await dataSource.query('ALTER TABLE contacts_gone RENAME TO contacts');
    }
    expect(
      (await ctx.app.request({ method: 'GET', url: '/contacts', key: project.secretKey })).status,
    ).toBe(200);
  });
});
