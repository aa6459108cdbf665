import Plunk from '@plunk/node';
import { simpleParser } from 'mailparser';
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fencedBlocks } from './support/markdown';
import { ROOT } from './support/processes';
import { waitForEmailStatus } from './support/sending';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

type Ctx = Awaited<ReturnType<typeof setupTestApp>>;

/** The .eml files the outbox holds for one email id (the file name carries it). */
async function outboxMessage(app: TestApp, emailId: string) {
  const dir = app.config.mailOutboxDir;
  const file = existsSync(dir)
    ? readdirSync(dir).find((f) => f.includes(emailId) && f.endsWith('.eml'))
    : undefined;
  if (!file)
    throw new Error(
      `no .eml for ${emailId} in ${dir}: ${existsSync(dir) ? readdirSync(dir).join(', ') : 'no folder'}`,
    );
  const raw = readFileSync(join(dir, file));
  return { raw: raw.toString('utf8'), parsed: await simpleParser(raw) };
}

describe('First run on the embedded default (outbox, no DNS)', () => {
  let ctx: Ctx;
  let app: TestApp;
  let project: TestProject;

  beforeAll(async () => {
    ctx = await setupTestApp(); // no SMTP_URL: the .eml outbox, REQUIRE_VERIFIED_SENDER defaults to false
    app = ctx.app;
    project = await app.createProject('First run');
  });
  afterAll(async () => ctx?.close());

  const send = (body: unknown, key = project.secretKey) =>
    app.request({ method: 'POST', url: '/v1/send', key, body });

  it('sends from a domain the project never added, unsigned, into ./var/outbox', async () => {
    const res = await send({
      to: 'newcomer@example.org',
      from: 'hello@my-laptop.test',
      subject: 'First',
      body: '<p>It works</p>',
    });
    expect(res.status).toBe(200);
    const [email] = res.body.data.emails;
    const record = await waitForEmailStatus(app, project.secretKey, email.id, ['SENT']);
    expect(record).toMatchObject({
      from: 'hello@my-laptop.test',
      dkimSigned: false,
      messageId: `<${email.id}@my-laptop.test>`,
    });
    const { raw, parsed } = await outboxMessage(app, email.id);
    expect(parsed.subject).toBe('First');
    expect(parsed.html).toContain('It works');
    expect(parsed.messageId).toBe(`<${email.id}@my-laptop.test>`);
    expect(raw).not.toMatch(/^DKIM-Signature:/im);
    const listed = await app.request({ method: 'GET', url: '/emails', key: project.secretKey });
    expect(listed.body.data.items.find((e: { id: string }) => e.id === email.id)).toMatchObject({
      dkimSigned: false,
    });
  });

  it('uses the project default sender when neither the request nor the template has one', async () => {
    const missing = await send({ to: 'a@example.org', subject: 's', body: 'b' });
    expect(missing.status).toBe(422);
    expect(missing.body.error.errors).toEqual([
      { field: 'from', code: 'required', message: expect.any(String) },
    ]);

    const set = await app.request({
      method: 'PATCH',
      url: '/project',
      key: project.secretKey,
      body: { defaultFrom: { email: ' Team@My-Laptop.test ', name: 'The Team' } },
    });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({
      name: 'First run',
      defaultFrom: { email: 'team@my-laptop.test', name: 'The Team' },
    });
    expect(
      (await app.request({ method: 'GET', url: '/project', key: project.secretKey })).body.data
        .defaultFrom,
    ).toEqual({
      email: 'team@my-laptop.test',
      name: 'The Team',
    });

    const res = await send({ to: 'b@example.org', subject: 'Default', body: 'b' });
    expect(res.status).toBe(200);
    const record = await waitForEmailStatus(app, project.secretKey, res.body.data.emails[0].id, [
      'SENT',
    ]);
    expect(record.from).toBe('team@my-laptop.test');
    const { parsed } = await outboxMessage(app, record.id);
    expect(parsed.from?.value).toEqual([{ address: 'team@my-laptop.test', name: 'The Team' }]);

    // The request's sender and the template's win over the default.
    const own = await send({
      to: 'c@example.org',
      from: 'me@elsewhere.test',
      subject: 's',
      body: 'b',
    });
    expect(
      (await waitForEmailStatus(app, project.secretKey, own.body.data.emails[0].id, ['SENT'])).from,
    ).toBe('me@elsewhere.test');
    const template = await app.request({
      method: 'POST',
      url: '/templates',
      key: project.secretKey,
      body: {
        name: 'T',
        subject: 'T',
        body: 'T',
        type: 'TRANSACTIONAL',
        from: 'tpl@templates.test',
      },
    });
    const viaTemplate = await send({ to: 'd@example.org', template: template.body.data.id });
    expect(
      (
        await waitForEmailStatus(app, project.secretKey, viaTemplate.body.data.emails[0].id, [
          'SENT',
        ])
      ).from,
    ).toBe('tpl@templates.test');

    // Another project's sends do not pick it up.
    const other = await app.createProject('Other');
    expect(
      (await send({ to: 'e@example.org', subject: 's', body: 'b' }, other.secretKey)).status,
    ).toBe(422);

    const cleared = await app.request({
      method: 'PATCH',
      url: '/project',
      key: project.secretKey,
      body: { defaultFrom: null },
    });
    expect(cleared.body.data.defaultFrom).toBeNull();
    expect((await send({ to: 'f@example.org', subject: 's', body: 'b' })).status).toBe(422);
  });

  it('validates the default sender and changes nothing on bad input', async () => {
    for (const defaultFrom of [
      { email: 'not-an-address' },
      'a@b.test',
      { email: 'a@b.test', name: 'x\r\nBcc: y@z.test' },
      { email: 'a@b.test', extra: 1 },
    ]) {
      const res = await app.request({
        method: 'PATCH',
        url: '/project',
        key: project.secretKey,
        body: { defaultFrom },
      });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0].field).toMatch(/^defaultFrom/);
    }
    const nameNull = await app.request({
      method: 'PATCH',
      url: '/project',
      key: project.secretKey,
      body: { name: null },
    });
    expect(nameNull.status).toBe(422);
    expect(
      (await app.request({ method: 'GET', url: '/project', key: project.secretKey })).body.data,
    ).toMatchObject({
      name: 'First run',
      defaultFrom: null,
    });
  });

  it('lists imports newest first in the list envelope, per project', async () => {
    const start = (n: number, key = project.secretKey) =>
      app.request({
        method: 'POST',
        url: '/contacts/import',
        key,
        body: { contacts: [{ email: `imp${n}@example.org` }] },
      });
    const first = await start(1);
    const second = await start(2);
    const other = await app.createProject('Importer elsewhere');
    await start(3, other.secretKey);
    const list = await app.request({
      method: 'GET',
      url: '/contacts/imports',
      key: project.secretKey,
    });
    expect(list.status).toBe(200);
    expect(list.body.data).toMatchObject({ total: 2, hasMore: false, nextCursor: null });
    expect(list.body.data.items.map((i: { id: string }) => i.id)).toEqual([
      second.body.data.id,
      first.body.data.id,
    ]);
    expect(list.body.data.items[0]).toMatchObject({ total: 1, errors: [] });
    const page = await app.request({
      method: 'GET',
      url: '/contacts/imports?limit=1',
      key: project.secretKey,
    });
    expect(page.body.data).toMatchObject({ hasMore: true, total: 2 });
    const next = await app.request({
      method: 'GET',
      url: `/contacts/imports?limit=1&cursor=${page.body.data.nextCursor}`,
      key: project.secretKey,
    });
    expect(next.body.data.items.map((i: { id: string }) => i.id)).toEqual([first.body.data.id]);
    expect(
      (
        await app.request({
          method: 'GET',
          url: '/contacts/imports?limit=0',
          key: project.secretKey,
        })
      ).status,
    ).toBe(400);
  });

  describe('CORS', () => {
    const preflight = (url: string, origin: string, target: TestApp = app) =>
      target.app.inject({
        method: 'OPTIONS',
        url,
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });

    it('lets any page call POST /v1/track with a public key', async () => {
      const pre = await preflight('/v1/track', 'https://shop.example');
      expect(pre.statusCode).toBe(204);
      expect(pre.headers['access-control-allow-origin']).toBe('*');
      expect(String(pre.headers['access-control-allow-methods'])).toContain('POST');
      expect(String(pre.headers['access-control-allow-headers']).toLowerCase()).toContain(
        'authorization',
      );
      expect(pre.headers['access-control-allow-credentials']).toBeUndefined();

      const res = await app.app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: {
          origin: 'https://shop.example',
          authorization: `Bearer ${project.publicKey}`,
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ email: 'browser@example.org', event: 'page-view' }),
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(String(res.headers['access-control-expose-headers'])).toContain('X-Request-Id');
      // An error answer is readable by the page too.
      const refused = await app.app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: {
          origin: 'https://shop.example',
          authorization: 'Bearer pk_wrong',
          'content-type': 'application/json',
        },
        payload: '{}',
      });
      expect(refused.statusCode).toBe(401);
      expect(refused.headers['access-control-allow-origin']).toBe('*');
    });

    it('sends no CORS headers on secret-key endpoints without CORS_ORIGINS', async () => {
      const res = await app.app.inject({
        method: 'GET',
        url: '/contacts',
        headers: { origin: 'https://shop.example', authorization: `Bearer ${project.secretKey}` },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const pre = await preflight('/contacts', 'https://shop.example');
      expect(pre.statusCode).toBe(404);
      expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('leaves requests without an Origin header alone, apart from Vary: Origin', async () => {
      // Servers and SDKs send no Origin: the CORS plugin does not run for them (it is run per request otherwise).
      const track = await app.app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: {
          authorization: `Bearer ${project.publicKey}`,
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ email: 'server@example.org', event: 'page-view' }),
      });
      expect(track.statusCode).toBe(200);
      expect(track.headers['access-control-allow-origin']).toBeUndefined();
      expect(track.headers['access-control-expose-headers']).toBeUndefined();
      expect(String(track.headers.vary)).toContain('Origin');
      // The same request from a page gets its CORS headers (the gate is on the header, not the route).
      const fromPage = await app.app.inject({
        method: 'POST',
        url: '/v1/track',
        headers: {
          origin: 'https://shop.example',
          authorization: `Bearer ${project.publicKey}`,
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ email: 'server@example.org', event: 'page-view' }),
      });
      expect(fromPage.headers['access-control-allow-origin']).toBe('*');
      // A bare OPTIONS (no Origin) still reaches the plugin: answered like a preflight, as before.
      const bare = await app.app.inject({ method: 'OPTIONS', url: '/v1/track' });
      expect(bare.statusCode).toBe(204);
      expect(bare.headers['access-control-allow-origin']).toBe('*');
    });

    it('answers the origins of CORS_ORIGINS on secret-key endpoints, and only those', async () => {
      const listed = await setupTestApp({ CORS_ORIGINS: 'https://admin.example' });
      try {
        const key = (await listed.app.createProject('Cors')).secretKey;
        const get = (origin: string) =>
          listed.app.app.inject({
            method: 'GET',
            url: '/contacts',
            headers: { origin, authorization: `Bearer ${key}` },
          });
        expect((await get('https://admin.example')).headers['access-control-allow-origin']).toBe(
          'https://admin.example',
        );
        expect(
          (await get('https://evil.example')).headers['access-control-allow-origin'],
        ).toBeUndefined();
        const pre = await preflight('/contacts', 'https://admin.example', listed.app);
        expect(pre.statusCode).toBe(204);
        expect(pre.headers['access-control-allow-origin']).toBe('https://admin.example');
        expect(pre.headers['access-control-allow-credentials']).toBeUndefined();
      } finally {
        await listed.close();
      }
    });
  });

  describe('the Plunk SDK (@plunk/node) against a listening server', () => {
    let plunk: Plunk;
    let publicPlunk: Plunk;
    let port: number;

    beforeAll(async () => {
      await app.app.listen({ port: 0, host: '127.0.0.1' });
      port = (app.app.getHttpServer().address() as AddressInfo).port;
      // The SDK resolves "track" and "send" against its base URL: the trailing slash matters.
      plunk = new Plunk(project.secretKey, { baseUrl: `http://127.0.0.1:${port}/v1/` });
      publicPlunk = new Plunk(project.publicKey, { baseUrl: `http://127.0.0.1:${port}/v1/` });
    });

    it('tracks and sends as it does against Plunk', async () => {
      await expect(
        publicPlunk.events.track({
          event: 'signed-up',
          email: 'sdk@example.org',
          data: { plan: 'pro' },
        }),
      ).resolves.toMatchObject({
        success: true,
      });
      const sent = (await plunk.emails.send({
        to: 'sdk@example.org',
        subject: 'Hi',
        body: '<p>from the SDK</p>',
        from: 'sdk@my-laptop.test',
      })) as unknown as {
        success: boolean;
        data: { emails: { id: string }[] };
      };
      expect(sent.success).toBe(true);
      await waitForEmailStatus(app, project.secretKey, sent.data.emails[0].id, ['SENT']);
    });

    // docs/sending.md shows the SDK as an ES module and as CommonJS; both run here as written,
    // with the base URL pointed at this server.
    it.each([
      ['plunk-esm', 'mjs'],
      ['plunk-cjs', 'cjs'],
    ])('runs the documented %s snippet as a .%s file with node', async (marker, extension) => {
      const blocks = fencedBlocks(
        readFileSync(join(ROOT, 'docs', 'sending.md'), 'utf8'),
        'js',
        marker,
      );
      expect(blocks).toHaveLength(1);
      const documentedUrl = 'http://localhost:3000/v1/';
      expect(blocks[0]).toContain(documentedUrl);
      const dir = mkdtempSync(join(tmpdir(), 'mw-plunk-'));
      try {
        symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
        const file = join(dir, `snippet.${extension}`);
        writeFileSync(file, blocks[0].replace(documentedUrl, `http://127.0.0.1:${port}/v1/`));
        const before = await app.request({
          method: 'GET',
          url: '/emails?limit=100',
          key: project.secretKey,
        });
        // Asynchronously: the server answering the snippet runs in this process.
        const child = spawn(process.execPath, [file], {
          cwd: dir,
          env: { PATH: process.env.PATH ?? '', MAILWRIGHT_SK: project.secretKey },
        });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const status = await new Promise<number | null>((resolve) =>
          child.on('exit', (code) => resolve(code)),
        );
        const run = { status, stderr };
        expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
        const after = await app.request({
          method: 'GET',
          url: '/emails?limit=100',
          key: project.secretKey,
        });
        const known = new Set(before.body.data.items.map((e: { id: string }) => e.id));
        const created = after.body.data.items.filter((e: { id: string }) => !known.has(e.id));
        expect(created).toEqual([
          expect.objectContaining({ to: 'ada@example.com', subject: 'Welcome' }),
        ]);
        const contacts = await app.request({
          method: 'GET',
          url: '/contacts?email=ada@example.com',
          key: project.secretKey,
        });
        expect(contacts.body.data.items[0].data).toMatchObject({ plan: 'pro' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('merges a send\'s data into the contact, except {"value": x, "persistent": false}, which only renders', async () => {
      const sent = await send({
        to: 'merge@example.org',
        from: 'hello@my-laptop.test',
        subject: 'Code {{ code }} for {{ tier }}',
        body: '<p>{{ code }}</p>',
        data: { tier: 'gold', code: { value: 'X-1', persistent: false } },
      });
      expect(sent.status).toBe(200);
      const contact = await app.request({
        method: 'GET',
        url: `/contacts/${sent.body.data.contact}`,
        key: project.secretKey,
      });
      expect(contact.body.data.data).toEqual({ tier: 'gold' });
      const record = await waitForEmailStatus(app, project.secretKey, sent.body.data.emails[0].id, [
        'SENT',
      ]);
      expect(record.subject).toBe('Code X-1 for gold');
    });

    it('surfaces our error messages instead of "Unknown API Error"', async () => {
      await expect(
        publicPlunk.events.track({ event: 'email.opened', email: 'sdk@example.org' }),
      ).rejects.toThrow(/^Validation failed: event: .*reserved/);
      const strict = await setupTestApp({ REQUIRE_VERIFIED_SENDER: 'true' });
      try {
        const strictProject = await strict.app.createProject('Strict');
        await strict.app.app.listen({ port: 0, host: '127.0.0.1' });
        const { port } = strict.app.app.getHttpServer().address() as AddressInfo;
        const strictPlunk = new Plunk(strictProject.secretKey, {
          baseUrl: `http://127.0.0.1:${port}/v1/`,
        });
        const error = await strictPlunk.emails
          .send({ to: 'x@example.org', subject: 's', body: 'b', from: 'a@unverified.test' })
          .catch((e: Error) => e);
        expect(error).toBeInstanceOf(Error);
        expect((error as Error).message).toBe(
          'The sender domain "unverified.test" is not a domain of this project',
        );
      } finally {
        await strict.close();
      }
    });
  });
});

describe('REQUIRE_VERIFIED_SENDER=true without SMTP', () => {
  let ctx: Ctx;
  beforeAll(async () => {
    ctx = await setupTestApp({ REQUIRE_VERIFIED_SENDER: 'true' });
  });
  afterAll(async () => ctx?.close());

  it('refuses the first-run send with 403 naming the domain, its state and the fix', async () => {
    const project = await ctx.app.createProject('Strict');
    const res = await ctx.app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: {
        to: 'newcomer@example.org',
        from: 'hello@my-laptop.test',
        subject: 'First',
        body: 'b',
      },
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      success: false,
      message: 'The sender domain "my-laptop.test" is not a domain of this project',
      error: {
        code: 'DOMAIN_NOT_VERIFIED',
        message: 'The sender domain "my-laptop.test" is not a domain of this project',
      },
    });
    expect(res.body.error.suggestion).toContain('POST /domains');
    expect(res.body.error.suggestion).toContain('REQUIRE_VERIFIED_SENDER=false'); // outbox mode: the developer's switch
    expect(
      (await ctx.app.request({ method: 'GET', url: '/emails', key: project.secretKey })).body.data
        .total,
    ).toBe(0);

    // A PENDING domain: the answer says so and points at its records.
    const domain = await ctx.app.request({
      method: 'POST',
      url: '/domains',
      key: project.secretKey,
      body: { domain: 'pending.test' },
    });
    const pending = await ctx.app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: { to: 'x@example.org', from: 'hi@pending.test', subject: 's', body: 'b' },
    });
    expect(pending.status).toBe(403);
    expect(pending.body.message).toMatch(/"pending\.test" is (PENDING|FAILED)/);
    expect(pending.body.error.suggestion).toContain(`/domains/${domain.body.data.id}`);

    // The default sender follows the same rule.
    const patch = await ctx.app.request({
      method: 'PATCH',
      url: '/project',
      key: project.secretKey,
      body: { defaultFrom: { email: 'team@my-laptop.test' } },
    });
    expect(patch.status).toBe(403);
    expect(patch.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
    expect(
      (await ctx.app.request({ method: 'GET', url: '/project', key: project.secretKey })).body.data
        .defaultFrom,
    ).toBeNull();
  });
});
