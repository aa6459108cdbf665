import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { createHook } from 'node:async_hooks';
import { AddressInfo, connect } from 'node:net';
import { Client } from 'pg';
import { tableFingerprint } from './support/fingerprint';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { InjectResult, setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * One envelope, one rule per input (issue 11, items 5 and 7; docs/bad-input.md):
 *
 * - every route with an id, found in the application's own route table (so a
 *   new route is walked without editing this file): a malformed id is 400
 *   naming the parameter, a well-formed unknown one 404 `<RESOURCE>_NOT_FOUND`;
 * - requests refused before routing (bad percent-encoding, over-long path
 *   parameter, over-long URL, unknown method) get the envelope and X-Request-Id,
 *   over a real socket where only a socket can send them;
 * - null for a field that cannot be null is 422 `required` on every body field
 *   the OpenAPI document does not mark nullable; null clears the nullable ones;
 * - names, subjects, bodies and event names must not be blank;
 * - a duplicate domain is refused before any RSA key is generated.
 *
 * Every refused request changes nothing (a fingerprint of the tables, and GETs).
 */

const UNKNOWN_UUID = '0190a000-0000-7000-8000-000000000000';
/**
 * Path parameters that are not ids (and so are not UUIDs): unsubscribe tokens, and the provider of
 * PUT /project/inbound/{provider} (an unknown one is 400 naming it, in provider-hooks' spec).
 */
const NON_ID_PARAMS = new Set(['token', 'provider']);

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `text` to a fresh connection and reads the whole answer (the server closes it). */
function rawRequest(port: number, text: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer to ${text.slice(0, 40)}`));
    }, 10_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = raw.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

describe('Input rules (e2e): path ids, early refusals, null, blank text, duplicate domains', () => {
  let dns: TestDnsServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  let db: Client;
  let port: number;
  const ids = { contact: '', segment: '', template: '', domain: '' };

  const req = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    key?: string,
  ) => app.request({ method, url, key: key ?? project.secretKey, body });

  beforeAll(async () => {
    dns = await startTestDnsServer();
    ctx = await setupTestApp({ DNS_SERVERS: dns.address, API_RATE_LIMIT_PER_MINUTE: '1000000' });
    app = ctx.app;
    project = await app.createProject('Input rules');
    db = new Client({ connectionString: ctx.db.url });
    await db.connect();
    const created = async (url: string, body: unknown) => {
      const res = await req('POST', url, body);
      if (res.status !== 201) throw new Error(`fixture POST ${url}: ${res.status} ${res.raw}`);
      return res.body.data.id as string;
    };
    ids.contact = await created('/contacts', { email: 'ada@example.com', data: { plan: 'pro' } });
    ids.segment = await created('/segments', {
      name: 'Pro',
      description: 'Paying',
      condition: { logic: 'AND', conditions: [] },
    });
    ids.template = await created('/templates', {
      name: 'Welcome',
      subject: 'Hi',
      body: '<p>Hi</p>',
      type: 'TRANSACTIONAL',
      fromName: 'Ada',
      replyTo: 'reply@example.com',
    });
    ids.domain = await created('/domains', { domain: 'rules.example.com' });
    // The first DNS check of the domain settles before fingerprints are compared.
    for (const deadline = Date.now() + 15_000; ;) {
      const pending = await db.query('SELECT 1 FROM domains WHERE last_checked_at IS NULL');
      if (pending.rowCount === 0) break;
      if (Date.now() > deadline) throw new Error('the first domain check did not run');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.app.getHttpServer().address() as AddressInfo).port;
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await ctx?.close();
    await dns?.stop();
  });

  /** Every table a client can write, as one comparable value. */
  async function fingerprint(): Promise<Record<string, string>> {
    const tables: Record<string, string> = {
      projects: 'SELECT * FROM projects',
      apiKeys: 'SELECT * FROM api_keys',
      contacts: 'SELECT * FROM contacts',
      events: 'SELECT * FROM events',
      segments: 'SELECT * FROM segments',
      templates: 'SELECT * FROM templates',
      // DNS checks run in the background and update their own columns; what a client writes is these.
      domains: 'SELECT id, project_id, domain, dkim_selector, dkim_public_key FROM domains',
      emails: 'SELECT * FROM emails',
      imports: 'SELECT * FROM contact_imports',
    };
    return tableFingerprint(db, tables);
  }

  /** The contract's envelope with this status and code, and the X-Request-Id header equal to error.requestId. */
  /** Routes whose body has required fields: a valid one, so the walk sees what the id alone causes. */
  const VALID_BODIES: Record<string, unknown> = {
    '/campaigns/:id/test': { emails: ['walker@example.com'] },
  };

  function expectEnvelope(
    status: number,
    headers: Record<string, unknown>,
    rawBody: string,
    expected: { status: number; code: string },
  ): { field?: string; code?: string }[] {
    const context = `${expected.status} ${expected.code} expected, got ${status} ${rawBody.slice(0, 400)}`;
    expect({ status, context }).toEqual({ status: expected.status, context });
    expect(String(headers['content-type'])).toMatch(/^application\/json/);
    const body = JSON.parse(rawBody);
    expect(body).toMatchObject({
      success: false,
      error: { code: expected.code, statusCode: expected.status },
    });
    expect(body.message).toBe(body.error.message);
    expect(body.error.message.length).toBeGreaterThan(0);
    expect(body.error.suggestion.trim().length).toBeGreaterThan(0);
    expect(typeof headers['x-request-id']).toBe('string');
    expect(body.error.requestId).toBe(headers['x-request-id']);
    expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
    expect(rawBody).not.toMatch(/FST_ERR|node_modules|\n\s+at /);
    return body.error.errors ?? [];
  }

  function expectError(res: InjectResult, status: number, code: string) {
    return expectEnvelope(res.status, res.headers, res.raw, { status, code });
  }

  /** The resources of the fixture project, as GET answers them. */
  async function snapshot(): Promise<unknown[]> {
    const urls = [
      `/contacts/${ids.contact}`,
      `/segments/${ids.segment}`,
      `/templates/${ids.template}`,
      `/domains/${ids.domain}`,
      '/project',
    ];
    const out: unknown[] = [];
    for (const url of urls) {
      const res = await req('GET', url);
      expect({ url, status: res.status }).toEqual({ url, status: 200 });
      const data = { ...res.body.data };
      delete data.memberCount;
      // Only what a client writes: DNS checks update a domain's status and records in the background.
      out.push(
        url.startsWith('/domains/')
          ? { id: data.id, domain: data.domain, createdAt: data.createdAt }
          : data,
      );
    }
    return out;
  }

  /** Runs refused requests and checks that nothing changed: the tables and the resources' GETs. */
  async function unchangedBy(run: () => Promise<void>): Promise<void> {
    const before = await fingerprint();
    const seen = await snapshot();
    await run();
    expect(await fingerprint()).toEqual(before);
    expect(await snapshot()).toEqual(seen);
  }

  // ---------------------------------------------------------------- path ids

  interface AppRoute {
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
    path: string;
  }

  /** The application's routes with path parameters, read from Nest's controller metadata. */
  function routesWithParams(): AppRoute[] {
    const routes: AppRoute[] = [];
    for (const module of app.app.get(ModulesContainer).values()) {
      for (const wrapper of module.controllers.values()) {
        const controller = wrapper.metatype as (new (...args: never[]) => object) | null;
        if (!controller) continue;
        const bases = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
        const proto = controller.prototype as Record<string, unknown>;
        for (const name of Object.getOwnPropertyNames(proto)) {
          const handler = proto[name];
          if (name === 'constructor' || typeof handler !== 'function') continue;
          const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
          if (method === undefined) continue;
          const paths = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, handler) ?? '');
          for (const base of bases) {
            for (const path of paths) {
              const full = `/${[base, path]
                .map((p) => p.replace(/^\/|\/$/g, ''))
                .filter(Boolean)
                .join('/')}`;
              if (full.includes(':'))
                routes.push({ method: RequestMethod[method] as AppRoute['method'], path: full });
            }
          }
        }
      }
    }
    return routes;
  }

  const paramsOf = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]);
  /**
   * `/segments/:id/contacts` → SEGMENT: the collection just before the first id, singular; a
   * first parameter named `<resource>Id` names it (`/suppressions/:contactId` → CONTACT).
   */
  const resourceOf = (path: string) => {
    const named = /^[^:]*:(\w+)Id\b/.exec(path);
    if (named) return named[1].toUpperCase();
    return path.split('/:')[0].split('/').pop()!.replace(/s$/, '').toUpperCase();
  };
  const withParams = (path: string, values: Record<string, string>) =>
    path.replace(/:(\w+)/g, (_, name: string) => values[name]);

  it('walks every {id} route: a malformed id is 400 naming the parameter, an unknown one 404 <RESOURCE>_NOT_FOUND', async () => {
    const routes = routesWithParams();
    const idRoutes = routes.filter((r) => paramsOf(r.path).some((p) => !NON_ID_PARAMS.has(p)));
    // Not vacuous: contacts, imports, segments, templates, domains and emails all have id routes.
    expect([...new Set(idRoutes.map((r) => resourceOf(r.path)))].sort()).toEqual(
      expect.arrayContaining(['CONTACT', 'DOMAIN', 'EMAIL', 'IMPORT', 'SEGMENT', 'TEMPLATE']),
    );
    for (const route of routes) {
      for (const name of paramsOf(route.path)) {
        // A new parameter is an id (named id or …Id) or is listed in NON_ID_PARAMS.
        expect({
          route,
          name,
          isId: name === 'id' || /Id$/.test(name) || NON_ID_PARAMS.has(name),
        }).toEqual({ route, name, isId: true });
      }
    }

    // The document agrees: every id parameter is a documented UUID with a documented 400.
    const doc = (await app.request({ method: 'GET', url: '/openapi.json' })).body;
    for (const route of idRoutes) {
      const op = doc.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
      expect({ route, documented: !!op }).toEqual({ route, documented: true });
      for (const name of paramsOf(route.path)) {
        const param = op.parameters.find(
          (p: { name: string; in: string }) => p.name === name && p.in === 'path',
        );
        expect({
          route,
          name,
          format: param?.schema?.format,
          has400: '400' in op.responses,
        }).toEqual({ route, name, format: 'uuid', has400: true });
      }
    }

    await unchangedBy(async () => {
      for (const route of idRoutes) {
        const names = paramsOf(route.path);
        const unknown = Object.fromEntries(names.map((n) => [n, UNKNOWN_UUID]));
        const body =
          route.method === 'POST' || route.method === 'PATCH'
            ? (VALID_BODIES[route.path] ?? {})
            : undefined;
        for (const name of names) {
          for (const bad of [
            'not-a-uuid',
            '123',
            `${UNKNOWN_UUID}x`,
            UNKNOWN_UUID.replace(/-/g, ''),
            '%20',
          ]) {
            const url = withParams(route.path, { ...unknown, [name]: bad });
            const res = await req(route.method, url, body);
            const where = `${route.method} ${url}`;
            const errors = expectError(res, 400, 'BAD_REQUEST');
            expect({ where, first: errors[0] }).toEqual({
              where,
              first: expect.objectContaining({ field: name, code: 'invalid_string' }),
            });
          }
        }
        for (const id of [UNKNOWN_UUID, UNKNOWN_UUID.toUpperCase()]) {
          const url = withParams(route.path, Object.fromEntries(names.map((n) => [n, id])));
          const res = await req(route.method, url, body);
          expectError(res, 404, `${resourceOf(route.path)}_NOT_FOUND`);
        }
      }
    });
  });

  // ---------------------------------------------------------------- refused before routing

  describe('requests refused before routing use the envelope and carry X-Request-Id', () => {
    const get = (target: string, method = 'GET') =>
      `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${project.secretKey}\r\nConnection: close\r\n\r\n`;
    const overSocket = async (text: string, status: number, code: string) => {
      const res = await rawRequest(port, text);
      expectEnvelope(res.status, res.headers, res.body, { status, code });
      return res;
    };

    it('a path that is not valid percent-encoding: 400 BAD_REQUEST (inject and socket)', async () => {
      await unchangedBy(async () => {
        expectError(await req('GET', '/contacts/%ff'), 400, 'BAD_REQUEST');
        expectError(await req('PATCH', `/segments/%E0%A4%A`, { name: 'x' }), 400, 'BAD_REQUEST');
        await overSocket(get('/contacts/%ff'), 400, 'BAD_REQUEST');
        await overSocket(get('/templates/%c0%af'), 400, 'BAD_REQUEST');
      });
    });

    it('a path parameter over 100 characters: 414 with code BAD_REQUEST; 100 characters still reach the route (400 "id")', async () => {
      await unchangedBy(async () => {
        expectError(await req('GET', `/contacts/${'a'.repeat(101)}`), 414, 'BAD_REQUEST');
        expectError(await req('DELETE', `/segments/${'b'.repeat(500)}`), 414, 'BAD_REQUEST');
        await overSocket(get(`/domains/${'c'.repeat(101)}`), 414, 'BAD_REQUEST');
        const atLimit = expectError(
          await req('GET', `/contacts/${'a'.repeat(100)}`),
          400,
          'BAD_REQUEST',
        );
        expect(atLimit[0]).toMatchObject({ field: 'id' });
      });
    });

    it('a request line and headers over 16 KB: 431 with code BAD_REQUEST (socket)', async () => {
      await unchangedBy(async () => {
        await overSocket(get(`/contacts?search=${'s'.repeat(17 * 1024)}`), 431, 'BAD_REQUEST');
        await overSocket(
          `POST /contacts HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'p'.repeat(17 * 1024)}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
          431,
          'BAD_REQUEST',
        );
      });
    });

    it('a method the HTTP parser does not know: 400 BAD_REQUEST (socket); a known method without a route: 404 ROUTE_NOT_FOUND', async () => {
      await unchangedBy(async () => {
        await overSocket(get('/contacts', 'BREW'), 400, 'BAD_REQUEST');
        await overSocket(get(`/contacts/${ids.contact}`, 'FROB'), 400, 'BAD_REQUEST');
        await overSocket(get('/contacts', 'PUT'), 404, 'ROUTE_NOT_FOUND');
        await overSocket(get('/contacts', 'PROPFIND'), 404, 'ROUTE_NOT_FOUND');
      });
    });

    it('closes a refused connection even when the client keeps its half open', async () => {
      const server = app.app.getHttpServer();
      const connections = () =>
        new Promise<number>((resolve, reject) =>
          server.getConnections((e, n) => (e ? reject(e) : resolve(n))),
        );
      const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      socket.setEncoding('utf8');
      let answer = '';
      socket.on('data', (chunk: string) => (answer += chunk));
      const ended = new Promise<void>((resolve) => socket.on('end', () => resolve()));
      socket.write('BREW /contacts HTTP/1.1\r\nHost: localhost\r\n\r\n'); // and never end our side
      try {
        await ended;
        expect(answer).toMatch(/^HTTP\/1\.1 400 /);
        // The server let go of the connection although the client's half is still open.
        const deadline = Date.now() + 2000;
        while ((await connections()) > 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 50));
        expect(await connections()).toBe(0);
      } finally {
        socket.destroy();
      }
    });

    it('the server keeps serving after each of them', async () => {
      const res = await rawRequest(port, get(`/contacts/${ids.contact}`));
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).data.email).toBe('ada@example.com');
    });
  });

  // ---------------------------------------------------------------- null

  describe('null for a field that cannot be null is 422 required; null clears a nullable field', () => {
    interface BodyOperation {
      method: 'POST' | 'PATCH';
      url: string;
      properties: Array<{ name: string; nullable: boolean }>;
    }

    /** Every JSON request body of the document with its top-level properties, through $refs. */
    async function bodyOperations(): Promise<BodyOperation[]> {
      const doc = (await app.request({ method: 'GET', url: '/openapi.json' })).body;
      const resolve = (schema: Record<string, unknown>): Record<string, unknown> =>
        typeof schema.$ref === 'string'
          ? resolve(doc.components.schemas[schema.$ref.split('/').pop()!])
          : schema;
      const out: BodyOperation[] = [];
      for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(
        doc.paths,
      )) {
        for (const method of ['post', 'patch'] as const) {
          const op = item[method] as
            | {
                requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
                security?: unknown[];
              }
            | undefined;
          const json = op?.requestBody?.content['application/json']?.schema;
          if (!op || !json || (Array.isArray(op.security) && op.security.length === 0)) continue;
          const schema = resolve(json);
          const properties = Object.entries(
            (schema.properties ?? {}) as Record<string, Record<string, unknown>>,
          ).map(([name, p]) => ({
            name,
            nullable: resolve(p).nullable === true || p.nullable === true,
          }));
          const url = path.replace(
            '{id}',
            path.startsWith('/segments')
              ? ids.segment
              : path.startsWith('/templates')
                ? ids.template
                : path.startsWith('/contacts')
                  ? ids.contact
                  : ids.domain,
          );
          out.push({ method: method.toUpperCase() as BodyOperation['method'], url, properties });
        }
      }
      return out;
    }

    it('every body field the document does not mark nullable refuses null with 422 required, naming it', async () => {
      const operations = await bodyOperations();
      expect(
        operations.map((o) => `${o.method} ${o.url.replace(/[0-9a-f-]{36}/, '{id}')}`),
      ).toEqual(
        expect.arrayContaining([
          'PATCH /segments/{id}',
          'POST /segments',
          'POST /templates',
          'PATCH /templates/{id}',
          'POST /contacts',
          'PATCH /contacts/{id}',
          'POST /v1/track',
          'POST /v1/send',
          'PATCH /project',
          'POST /domains',
        ]),
      );
      await unchangedBy(async () => {
        for (const op of operations) {
          for (const property of op.properties.filter((p) => !p.nullable)) {
            const res = await req(op.method, op.url, { [property.name]: null });
            const where = `${op.method} ${op.url} {"${property.name}": null}`;
            const errors = expectError(res, 422, 'VALIDATION_ERROR');
            expect({ where, errors }).toEqual({
              where,
              errors: expect.arrayContaining([
                expect.objectContaining({ field: property.name, code: 'required' }),
              ]),
            });
          }
        }
      });
    });

    it('PATCH /segments/{id} {"name": null} is 422, not 500, and the segment keeps its name', async () => {
      await unchangedBy(async () => {
        const res = await req('PATCH', `/segments/${ids.segment}`, { name: null });
        expect(expectError(res, 422, 'VALIDATION_ERROR')).toEqual([
          expect.objectContaining({
            field: 'name',
            code: 'required',
            message: 'name must not be null',
          }),
        ]);
        expectError(
          await req('PATCH', `/segments/${ids.segment}`, { name: 'Renamed', condition: null }),
          422,
          'VALIDATION_ERROR',
        );
        expectError(
          await req('PATCH', `/contacts/${ids.contact}`, { subscribed: null }),
          422,
          'VALIDATION_ERROR',
        );
        expectError(
          await req('PATCH', `/contacts/${ids.contact}`, { data: null }),
          422,
          'VALIDATION_ERROR',
        );
        expectError(
          await req('POST', `/templates/${ids.template}/preview`, { contactId: null }),
          422,
          'VALIDATION_ERROR',
        );
        expectError(
          await req('POST', '/v1/track', {
            email: 'ada@example.com',
            event: 'x',
            subscribed: null,
          }),
          422,
          'VALIDATION_ERROR',
        );
        expectError(
          await req('POST', '/v1/send', {
            to: 'ada@example.com',
            subject: 's',
            body: 'b',
            from: { email: 'a@rules.example.com', name: null },
          }),
          422,
          'VALIDATION_ERROR',
        );
      });
      expect((await req('GET', `/segments/${ids.segment}`)).body.data.name).toBe('Pro');
    });

    it('null clears the nullable fields: a segment description, a template sender, the project default sender', async () => {
      const segment = await req('PATCH', `/segments/${ids.segment}`, { description: null });
      expect(segment.status).toBe(200);
      expect(segment.body.data.description).toBeNull();
      const template = await req('PATCH', `/templates/${ids.template}`, {
        fromName: null,
        replyTo: null,
      });
      expect(template.status).toBe(200);
      expect(template.body.data).toMatchObject({ name: 'Welcome', fromName: null, replyTo: null });
      const created = await req('POST', '/templates', {
        name: 'No sender',
        subject: 's',
        body: 'b',
        type: 'MARKETING',
        from: null,
      });
      expect(created.status).toBe(201);
      expect(created.body.data.from).toBeNull();
      expect((await req('DELETE', `/templates/${created.body.data.id}`)).status).toBe(200);
      const projectRes = await req('PATCH', '/project', { defaultFrom: null });
      expect(projectRes.status).toBe(200);
      expect((await req('GET', `/segments/${ids.segment}`)).body.data.description).toBeNull();
    });
  });

  // ---------------------------------------------------------------- blank text

  it('names, subjects, bodies, event names and file names must not be empty or only whitespace (422 too_small)', async () => {
    const blank = ['', '   ', ' \t ', '\u00a0'];
    const cases: Array<
      [method: 'POST' | 'PATCH', url: string, body: Record<string, unknown>, field: string]
    > = [];
    const template = { name: 'T', subject: 'S', body: 'B', type: 'MARKETING' };
    const mail = { to: 'ada@example.com', subject: 'S', body: 'B', from: 'me@rules.example.com' };
    for (const b of blank) {
      cases.push(
        ['POST', '/templates', { ...template, name: b }, 'name'],
        ['POST', '/templates', { ...template, subject: b }, 'subject'],
        ['POST', '/templates', { ...template, body: b }, 'body'],
        ['POST', '/templates', { ...template, fromName: b }, 'fromName'],
        ['PATCH', `/templates/${ids.template}`, { name: b }, 'name'],
        ['PATCH', `/templates/${ids.template}`, { subject: b }, 'subject'],
        ['PATCH', `/templates/${ids.template}`, { body: b }, 'body'],
        ['POST', '/segments', { name: b, condition: { logic: 'AND', conditions: [] } }, 'name'],
        ['PATCH', `/segments/${ids.segment}`, { name: b }, 'name'],
        ['PATCH', '/project', { name: b }, 'name'],
        ['POST', '/v1/send', { ...mail, subject: b }, 'subject'],
        ['POST', '/v1/send', { ...mail, body: b }, 'body'],
        ['POST', '/v1/send', { ...mail, name: b }, 'name'],
        [
          'POST',
          '/v1/send',
          { ...mail, attachments: [{ filename: b, content: 'aGk=' }] },
          'attachments[0].filename',
        ],
      );
      // A TAB in an event name is first a control character (invalid_string).
      if (!b.includes('\t'))
        cases.push(['POST', '/v1/track', { email: 'ada@example.com', event: b }, 'event']);
    }
    await unchangedBy(async () => {
      for (const [method, url, body, field] of cases) {
        const res = await req(method, url, body);
        const where = `${method} ${url} ${JSON.stringify(body).slice(0, 120)}`;
        const errors = expectError(res, 422, 'VALIDATION_ERROR');
        expect({ where, errors }).toEqual({
          where,
          errors: expect.arrayContaining([expect.objectContaining({ field, code: 'too_small' })]),
        });
      }
    });
  });

  it('names are trimmed; subjects and bodies are stored as given', async () => {
    const res = await req('POST', '/templates', {
      name: '  Spaced  ',
      subject: ' Hi {{ name }} ',
      body: '\n<p>x</p>\n',
      type: 'MARKETING',
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      name: 'Spaced',
      subject: ' Hi {{ name }} ',
      body: '\n<p>x</p>\n',
    });
    expect((await req('DELETE', `/templates/${res.body.data.id}`)).status).toBe(200);
    const segment = await req('PATCH', `/segments/${ids.segment}`, { name: '  Pro  ' });
    expect(segment.body.data.name).toBe('Pro');
  });

  // ---------------------------------------------------------------- duplicate domains

  it('a duplicate domain is 409 CONFLICT before any RSA key is generated', async () => {
    let keyPairs = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'KEYPAIRGENREQUEST') keyPairs += 1;
      },
    }).enable();
    try {
      const first = await req('POST', '/domains', { domain: 'fresh-dup.example.com' });
      expect(first.status).toBe(201);
      expect(keyPairs).toBeGreaterThanOrEqual(1);
      keyPairs = 0;
      await unchangedBy(async () => {
        for (const name of [
          'fresh-dup.example.com',
          'FRESH-DUP.example.com',
          ' fresh-dup.example.com ',
          'rules.example.com',
        ]) {
          const res = await req('POST', '/domains', { domain: name });
          expectError(res, 409, 'CONFLICT');
        }
      });
      expect(keyPairs).toBe(0);
      const listed = await req('GET', '/domains');
      expect(
        listed.body.data.items.filter(
          (d: { domain: string }) => d.domain === 'fresh-dup.example.com',
        ),
      ).toHaveLength(1);
    } finally {
      hook.disable();
    }
  });
});
