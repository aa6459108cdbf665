import { getQueueToken } from '@nestjs/bullmq';
import { Queue, QueueEvents } from 'bullmq';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { Client } from 'pg';
import { ApiException } from '../src/common/errors/api-exception';
import { DomainsProcessor } from '../src/domains/domains.processor';
import { DomainsService } from '../src/domains/domains.service';
import { DOMAIN_JOBS, DOMAIN_SWEEP_SCHEDULER_ID } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { redisConnectionOptions } from '../src/queue/redis';
import { splitTxt, startTestDnsServer, TestDnsServer } from './support/dns-server';
import { DomainBody, publishDomainRecords, verifyDomainForTest } from './support/domains';
import { pollUntil } from './support/poll';
import { setupTestApp, startTestApp, TestApp, testConfig, TestProject } from './support/test-app';

/** Success and error envelopes share a variable in these tests; each assertion reads the side it expects. */
interface DomainReply {
  data: DomainBody;
  error: { code: string; errors?: Array<{ field: string; code: string }> };
}

describe('Sending domains (e2e, DNS from a loopback test server)', () => {
  let dns: TestDnsServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  let other: TestProject;
  let db: Client;
  let queue: Queue;
  let queueEvents: QueueEvents;

  beforeAll(async () => {
    dns = await startTestDnsServer();
    // Outbox mode, but senders must be verified as they are with SMTP.
    ctx = await setupTestApp({ DNS_SERVERS: dns.address, REQUIRE_VERIFIED_SENDER: 'true' });
    app = ctx.app;
    project = await app.createProject('Domains');
    other = await app.createProject('Other');
    db = new Client({ connectionString: ctx.db.url });
    await db.connect();
    queue = app.app.get<Queue>(getQueueToken(QUEUES.DOMAINS));
    queueEvents = new QueueEvents(QUEUES.DOMAINS, {
      connection: redisConnectionOptions(app.config.redisUrl),
      prefix: ctx.prefix,
    });
    await queueEvents.waitUntilReady();
  });

  afterAll(async () => {
    await queueEvents?.close();
    await db?.end();
    await ctx?.close();
    await dns?.stop();
  });

  const create = (domain: string, key = project.secretKey) =>
    app.request<DomainReply>({ method: 'POST', url: '/domains', key, body: { domain } });
  const verify = (id: string, key = project.secretKey) =>
    app.request<DomainReply>({ method: 'POST', url: `/domains/${id}/verify`, key });
  const get = (id: string, key = project.secretKey) =>
    app.request<DomainReply>({ method: 'GET', url: `/domains/${id}`, key });
  const record = (domain: DomainBody, purpose: string) =>
    domain.records.find((r) => r.purpose === purpose)!;
  /** The signing domain; null (unsigned) cannot happen while REQUIRE_VERIFIED_SENDER holds. */
  const assertCanSend = (projectId: string, from: string) =>
    app.app
      .get(DomainsService)
      .assertCanSend(projectId, from)
      .then((sender) => {
        if (!sender)
          throw new Error('assertCanSend answered unsigned while senders must be verified');
        return sender;
      });

  /** Runs the repeating job's handler now, through the queue, as the scheduler would. */
  async function runSweep(): Promise<{ checked: number; verified: number; failed: number }> {
    const job = await queue.add(DOMAIN_JOBS.SWEEP, {});
    return job.waitUntilFinished(queueEvents, 20_000);
  }

  async function sendRefusal(projectId: string, from: string): Promise<ApiException> {
    const error = await assertCanSend(projectId, from).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiException);
    return error as ApiException;
  }

  it('creates a domain at once with the records to publish, then checks it in the background', async () => {
    const res = await create('Acme-Create.example');
    expect(res.status).toBe(201);
    const domain = res.body.data;
    expect(domain).toMatchObject({
      domain: 'acme-create.example',
      status: 'PENDING',
      lastCheckedAt: null,
      verifiedAt: null,
    });
    expect(domain.records).toEqual([
      {
        type: 'TXT',
        name: '_mailwright.acme-create.example',
        value: expect.stringMatching(/^mailwright-verification=[0-9a-f]{32}$/),
        purpose: 'OWNERSHIP',
        required: true,
        status: 'PENDING',
      },
      {
        type: 'TXT',
        name: expect.stringMatching(/^mw[0-9a-f]{10}\._domainkey\.acme-create\.example$/),
        value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/),
        purpose: 'DKIM',
        required: true,
        status: 'PENDING',
      },
      {
        type: 'TXT',
        name: 'acme-create.example',
        value: 'v=spf1 a mx ~all',
        purpose: 'SPF',
        required: false,
        status: 'PENDING',
      },
      {
        type: 'TXT',
        name: '_dmarc.acme-create.example',
        value: 'v=DMARC1; p=none;',
        purpose: 'DMARC',
        required: false,
        status: 'PENDING',
      },
      {
        type: 'CNAME',
        name: 'bounces.acme-create.example',
        value: app.config.returnPathDomain,
        purpose: 'RETURN_PATH',
        required: false,
        status: 'PENDING',
      },
    ]);
    // The DKIM public key is a real 2048-bit RSA key.
    const p = record(domain, 'DKIM').value.split('p=')[1];
    const publicKey = createPublicKey({
      key: Buffer.from(p, 'base64'),
      format: 'der',
      type: 'spki',
    });
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);

    // The check queued on creation runs without any API call and asks our DNS server.
    const checked = await pollUntil(
      () => get(domain.id),
      (r) => r.body.data.lastCheckedAt !== null,
      10_000,
    );
    expect(checked.body.data.status).toBe('PENDING');
    expect(dns.queries).toContain('TXT _mailwright.acme-create.example');
  });

  it('never shows the DKIM private key, and stores it only encrypted', async () => {
    const created = (await create('secret-key.example')).body.data;
    const verified = await verifyDomainForTest(app, project, 'signing.example', dns);
    const { dkim } = await assertCanSend(project.id, 'news@signing.example');
    expect(dkim.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    // The key handed to the sender is the pair of the published public key.
    const derivedPublic = createPublicKey(createPrivateKey(dkim.privateKey)).export({
      type: 'spki',
      format: 'der',
    });
    expect(record(verified, 'DKIM').value).toContain(`p=${derivedPublic.toString('base64')}`);

    const keyBody = dkim.privateKey.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
    const responses = [
      await get(verified.id),
      await verify(verified.id),
      await get(created.id),
      await app.request({ method: 'GET', url: '/domains?limit=100', key: project.secretKey }),
    ];
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(response.raw).not.toContain('PRIVATE KEY');
      expect(response.raw).not.toContain(keyBody.slice(100, 160));
    }
    expect(JSON.stringify((await create('another-key.example')).body)).not.toContain('PRIVATE');

    const { rows } = await db.query<{ row_text: string; sealed: Buffer }>(
      'SELECT d::text AS row_text, dkim_private_key_sealed AS sealed FROM domains d WHERE id = $1',
      [verified.id],
    );
    expect(rows).toHaveLength(1);
    const stored = rows[0];
    for (const haystack of [stored.row_text, stored.sealed.toString('latin1')]) {
      expect(haystack).not.toContain('-----BEGIN');
      expect(haystack).not.toContain(keyBody.slice(0, 40));
      expect(haystack).not.toContain(keyBody.slice(200, 240));
    }
    // The DER of the key is not stored in clear either.
    const der = createPrivateKey(dkim.privateKey).export({ type: 'pkcs8', format: 'der' });
    expect(stored.sealed.includes(der.subarray(40, 80))).toBe(false);
  });

  it('stays PENDING without records, and with the ownership record only', async () => {
    const domain = (await create('stepwise.example')).body.data;
    const none = await verify(domain.id);
    expect(none.status).toBe(200);
    expect(none.body.data.status).toBe('PENDING');
    expect(none.body.data.records.map((r) => r.status)).toEqual([
      'PENDING',
      'PENDING',
      'PENDING',
      'PENDING',
      'PENDING',
    ]);
    expect(none.body.data.lastCheckedAt).not.toBeNull();

    publishDomainRecords(dns, domain, ['OWNERSHIP']);
    const ownershipOnly = (await verify(domain.id)).body.data;
    expect(ownershipOnly.status).toBe('PENDING');
    expect(record(ownershipOnly, 'OWNERSHIP').status).toBe('VERIFIED');
    expect(['PENDING', 'FAILED']).toContain(record(ownershipOnly, 'DKIM').status);
    expect(ownershipOnly.verifiedAt).toBeNull();
    expect((await sendRefusal(project.id, 'a@stepwise.example')).code).toBe('DOMAIN_NOT_VERIFIED');

    publishDomainRecords(dns, domain, ['DKIM', 'SPF', 'DMARC']);
    const both = (await verify(domain.id)).body.data;
    expect(both.status).toBe('VERIFIED');
    // The return-path CNAME is not required: VERIFIED without it, the record itself PENDING.
    expect(both.records.map((r) => r.status)).toEqual([
      'VERIFIED',
      'VERIFIED',
      'VERIFIED',
      'VERIFIED',
      'PENDING',
    ]);
    expect(both.verifiedAt).not.toBeNull();
    expect((await assertCanSend(project.id, 'hello@stepwise.example')).returnPathDomain).toBeNull();

    publishDomainRecords(dns, domain, ['RETURN_PATH']);
    const all = (await verify(domain.id)).body.data;
    expect(all.records.map((r) => r.status)).toEqual([
      'VERIFIED',
      'VERIFIED',
      'VERIFIED',
      'VERIFIED',
      'VERIFIED',
    ]);
    expect(dns.queries).toContain('CNAME bounces.stepwise.example');
    const sender = await assertCanSend(project.id, 'Stepwise <Hello@Stepwise.example>');
    expect(sender).toMatchObject({
      domainId: domain.id,
      domain: 'stepwise.example',
      returnPathDomain: 'bounces.stepwise.example',
    });
    expect(record(both, 'DKIM').name).toBe(
      `${sender.dkim.keySelector}._domainkey.stepwise.example`,
    );
    expect(sender.dkim.domainName).toBe('stepwise.example');
  });

  it('does not verify a DKIM record that carries another key', async () => {
    const domain = (await create('wrong-key.example')).body.data;
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
      type: 'spki',
      format: 'der',
    });
    publishDomainRecords(dns, domain, ['OWNERSHIP']);
    dns.setTxt(record(domain, 'DKIM').name, `v=DKIM1; k=rsa; p=${otherKey.toString('base64')}`);
    const checked = (await verify(domain.id)).body.data;
    expect(checked.status).toBe('PENDING');
    expect(record(checked, 'DKIM').status).toBe('FAILED');
    expect(record(checked, 'OWNERSHIP').status).toBe('VERIFIED');
    await sendRefusal(project.id, 'a@wrong-key.example');
  });

  it('tells per record why it is not verified: NXDOMAIN, NO_RECORD, MISMATCH with the values found, DNS_ERROR', async () => {
    const domain = (await create('why-not.example')).body.data;
    const nothing = (await verify(domain.id)).body.data;
    expect(record(nothing, 'OWNERSHIP')).toMatchObject({ status: 'PENDING', error: 'NXDOMAIN' });
    expect(record(nothing, 'OWNERSHIP').found).toBeUndefined();

    // Ownership right, a wrong DKIM key, other TXT (but no SPF) at the domain, DMARC's name failing upstream.
    publishDomainRecords(dns, domain, ['OWNERSHIP']);
    const wrongKey = 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong';
    dns.setTxt(record(domain, 'DKIM').name, wrongKey);
    dns.setTxt('why-not.example', 'google-site-verification=abc');
    dns.setFailure(record(domain, 'DMARC').name);
    const checked = (await get((await verify(domain.id)).body.data.id)).body.data;
    expect(record(checked, 'OWNERSHIP')).toMatchObject({ status: 'VERIFIED' });
    expect(record(checked, 'OWNERSHIP').error).toBeUndefined();
    expect(record(checked, 'DKIM')).toMatchObject({
      status: 'FAILED',
      error: 'MISMATCH',
      found: [wrongKey],
    });
    expect(record(checked, 'SPF')).toMatchObject({
      status: 'PENDING',
      error: 'NO_RECORD',
      found: ['google-site-verification=abc'],
    });
    expect(record(checked, 'DMARC')).toMatchObject({ status: 'PENDING', error: 'DNS_ERROR' });
    dns.setFailure(record(domain, 'DMARC').name, false);

    // Fixed: the reasons go away with the problems.
    publishDomainRecords(dns, domain, ['DKIM']);
    const fixed = (await verify(domain.id)).body.data;
    expect(fixed.status).toBe('VERIFIED');
    for (const purpose of ['OWNERSHIP', 'DKIM']) {
      expect(record(fixed, purpose).error).toBeUndefined();
      expect(record(fixed, purpose).found).toBeUndefined();
    }
  });

  it('verifies a DKIM key split into 255-byte strings, in any tag order and spacing', async () => {
    const domain = (await create('split-dkim.example')).body.data;
    const dkim = record(domain, 'DKIM');
    const key = dkim.value.split('p=')[1];
    expect(dkim.value.length).toBeGreaterThan(255);
    publishDomainRecords(dns, domain, ['OWNERSHIP']);
    dns.setTxt(dkim.name, splitTxt(dkim.value));
    expect(splitTxt(dkim.value).length).toBeGreaterThan(1);
    expect((await verify(domain.id)).body.data.status).toBe('VERIFIED');

    // A zone editor's rendering: other tag order, a space inside the key, quotes kept in the text.
    const second = (await create('split-dkim-2.example')).body.data;
    publishDomainRecords(dns, second, ['OWNERSHIP']);
    const key2 = record(second, 'DKIM').value.split('p=')[1];
    dns.setTxt(record(second, 'DKIM').name, [
      `"k=rsa;  p=${key2.slice(0, 120)}`,
      ` ${key2.slice(120, 300)}`,
      `${key2.slice(300)}" ; v=DKIM1`,
    ]);
    expect((await verify(second.id)).body.data.status).toBe('VERIFIED');
    expect(key2).not.toBe(key);
  });

  it('the repeating job verifies a domain once its records appear, and fails it when the DKIM record goes', async () => {
    const domain = (await create('swept.example')).body.data;
    await pollUntil(
      () => get(domain.id),
      (r) => r.body.data.lastCheckedAt !== null,
      10_000,
    );

    await runSweep();
    expect((await get(domain.id)).body.data.status).toBe('PENDING');

    publishDomainRecords(dns, domain);
    const result = await runSweep();
    expect(result.checked).toBeGreaterThanOrEqual(1);
    const verified = (await get(domain.id)).body.data;
    expect(verified.status).toBe('VERIFIED');
    expect(verified.verifiedAt).not.toBeNull();
    await expect(assertCanSend(project.id, 'a@swept.example')).resolves.toMatchObject({
      domainId: domain.id,
    });

    // Verified domains are re-checked daily: removing the record changes nothing until the day is over.
    dns.removeTxt(record(domain, 'DKIM').name);
    await runSweep();
    expect((await get(domain.id)).body.data.status).toBe('VERIFIED');

    await db.query(
      `UPDATE domains SET last_checked_at = now() - interval '25 hours' WHERE id = $1`,
      [domain.id],
    );
    await runSweep();
    const failed = (await get(domain.id)).body.data;
    expect(failed.status).toBe('FAILED');
    expect(record(failed, 'DKIM').status).toBe('FAILED');
    expect(record(failed, 'OWNERSHIP').status).toBe('VERIFIED');
    const refusal = await sendRefusal(project.id, 'a@swept.example');
    expect(refusal.getStatus()).toBe(403);
    expect(refusal.code).toBe('DOMAIN_NOT_VERIFIED');

    // Publishing the record again and asking for a check brings it back.
    publishDomainRecords(dns, domain, ['DKIM']);
    expect((await verify(domain.id)).body.data.status).toBe('VERIFIED');
  });

  it('keeps a verified domain through DNS server failures', async () => {
    const domain = await verifyDomainForTest(app, project, 'flaky-dns.example', dns);
    dns.setFailure(record(domain, 'DKIM').name);
    try {
      const checked = (await verify(domain.id)).body.data;
      expect(checked.status).toBe('VERIFIED');
      expect(record(checked, 'DKIM').status).toBe('VERIFIED');
    } finally {
      dns.setFailure(record(domain, 'DKIM').name, false);
    }
  });

  it('fails a domain still pending after 72 hours', async () => {
    const domain = (await create('too-late.example')).body.data;
    await db.query(`UPDATE domains SET created_at = now() - interval '73 hours' WHERE id = $1`, [
      domain.id,
    ]);
    await runSweep();
    const failed = (await get(domain.id)).body.data;
    expect(failed.status).toBe('FAILED');
    expect(record(failed, 'OWNERSHIP').status).toBe('FAILED');
    expect(record(failed, 'SPF').status).toBe('PENDING');
  });

  it('registers the repeating job once, however many workers start', async () => {
    const second = await startTestApp(
      testConfig(ctx.db.url, ctx.prefix, { DNS_SERVERS: dns.address, APP_ROLE: 'worker' }),
    );
    try {
      // Closing a worker app while its BullMQ workers still connect makes them emit unhandled errors.
      await second.app.get(DomainsProcessor).worker.waitUntilReady();
      const schedulers = await queue.getJobSchedulers();
      expect(schedulers).toHaveLength(1);
      expect(schedulers[0]).toMatchObject({
        key: DOMAIN_SWEEP_SCHEDULER_ID,
        every: 5 * 60_000,
        name: DOMAIN_JOBS.SWEEP,
      });
    } finally {
      await second.close();
    }
  });

  it('treats subdomains as domains of their own', async () => {
    await verifyDomainForTest(app, project, 'parent.example', dns);
    await expect(assertCanSend(project.id, 'a@parent.example')).resolves.toBeDefined();
    expect((await sendRefusal(project.id, 'a@mail.parent.example')).code).toBe(
      'DOMAIN_NOT_VERIFIED',
    );
    const sub = await verifyDomainForTest(app, project, 'mail.parent.example', dns);
    await expect(assertCanSend(project.id, 'a@mail.parent.example')).resolves.toMatchObject({
      domainId: sub.id,
    });
  });

  it("keeps projects apart: another project's domain is not found and does not let it send", async () => {
    const mine = await verifyDomainForTest(app, project, 'mine-only.example', dns);
    for (const req of [
      get(mine.id, other.secretKey),
      verify(mine.id, other.secretKey),
      app.request({ method: 'DELETE', url: `/domains/${mine.id}`, key: other.secretKey }),
    ]) {
      const res = await req;
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('DOMAIN_NOT_FOUND');
    }
    await sendRefusal(other.id, 'a@mine-only.example');
    // The same name may be added by another project, with a key and selector of its own.
    const theirs = (await create('mine-only.example', other.secretKey)).body.data;
    expect(theirs.status).toBe('PENDING');
    expect(record(theirs, 'DKIM').name).not.toBe(record(mine, 'DKIM').name);
    const otherList = await app.request({
      method: 'GET',
      url: '/domains?limit=100',
      key: other.secretKey,
    });
    expect(otherList.body.data.items.map((d: DomainBody) => d.id)).toEqual([theirs.id]);
  });

  it('refuses a duplicate in the project with 409, whatever the spelling', async () => {
    expect((await create('dup.example')).status).toBe(201);
    for (const spelling of ['dup.example', 'DUP.Example', ' dup.example ']) {
      const res = await create(spelling);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    }
    expect((await create('bücher.example')).status).toBe(201);
    expect((await create('xn--bcher-kva.example')).status).toBe(409);
  });

  it('stores IDN names as lower-case punycode', async () => {
    const idn = await app.createProject('IDN');
    const res = await create('BÜCHER.example', idn.secretKey);
    expect(res.status).toBe(201);
    expect(res.body.data.domain).toBe('xn--bcher-kva.example');
    expect(record(res.body.data, 'OWNERSHIP').name).toBe('_mailwright.xn--bcher-kva.example');
    // Senders may write the Unicode form; it is the same domain.
    publishDomainRecords(dns, res.body.data);
    expect((await verify(res.body.data.id, idn.secretKey)).body.data.status).toBe('VERIFIED');
    await expect(assertCanSend(idn.id, 'leser@bücher.example')).resolves.toMatchObject({
      domain: 'xn--bcher-kva.example',
    });
  });

  it.each([
    ['https://x.com/', 'invalid_string'],
    ['localhost', 'invalid_string'],
    ['com', 'invalid_string'],
    ['co.uk', 'invalid_string'],
    ['x.com.', 'invalid_string'],
    ['10.0.0.1', 'invalid_string'],
    [`${'a'.repeat(63)}.`.repeat(4) + 'a'.repeat(44), 'too_big'],
  ])('answers 422 on the field "domain" for %s', async (input, code) => {
    const res = await create(input);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'domain', code })]);
  });

  it('answers 422 for a missing or non-string domain and for unknown fields', async () => {
    const missing = await app.request({
      method: 'POST',
      url: '/domains',
      key: project.secretKey,
      body: {},
    });
    expect(missing.status).toBe(422);
    expect(missing.body.error.errors).toEqual([
      expect.objectContaining({ field: 'domain', code: 'required' }),
    ]);
    const wrongType = await app.request({
      method: 'POST',
      url: '/domains',
      key: project.secretKey,
      body: { domain: 42 },
    });
    expect(wrongType.body.error.errors).toEqual([
      expect.objectContaining({ field: 'domain', code: 'invalid_type' }),
    ]);
    const extra = await app.request({
      method: 'POST',
      url: '/domains',
      key: project.secretKey,
      body: { domain: 'extra.example', dkimPrivateKey: 'x' },
    });
    expect(extra.status).toBe(422);
    expect(extra.body.error.errors).toEqual([
      expect.objectContaining({ field: 'dkimPrivateKey', code: 'unrecognized_keys' }),
    ]);
  });

  it('lists domains newest first with a status filter and pagination', async () => {
    const lister = await app.createProject('Lister');
    const pending = (await create('list-pending.example', lister.secretKey)).body.data;
    const verified = await verifyDomainForTest(app, lister, 'list-verified.example', dns);
    const all = await app.request({ method: 'GET', url: '/domains', key: lister.secretKey });
    expect(all.status).toBe(200);
    expect(all.body.data).toMatchObject({ total: 2, hasMore: false, nextCursor: null });
    expect(all.body.data.items.map((d: DomainBody) => d.id)).toEqual([verified.id, pending.id]);

    const onlyVerified = await app.request({
      method: 'GET',
      url: '/domains?status=VERIFIED',
      key: lister.secretKey,
    });
    expect(onlyVerified.body.data.items.map((d: DomainBody) => d.domain)).toEqual([
      'list-verified.example',
    ]);
    expect(onlyVerified.body.data.total).toBe(1);
    expect(onlyVerified.body.data.items[0].records).toHaveLength(5);

    const page1 = await app.request({
      method: 'GET',
      url: '/domains?limit=1',
      key: lister.secretKey,
    });
    expect(page1.body.data).toMatchObject({ total: 2, hasMore: true });
    const page2 = await app.request({
      method: 'GET',
      url: `/domains?limit=1&cursor=${page1.body.data.nextCursor}`,
      key: lister.secretKey,
    });
    expect(page2.body.data.items.map((d: DomainBody) => d.id)).toEqual([pending.id]);

    const bad = await app.request({
      method: 'GET',
      url: '/domains?status=DONE',
      key: lister.secretKey,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors).toEqual([expect.objectContaining({ field: 'status' })]);
  });

  it('deletes a domain; sending from it is refused from then on', async () => {
    const domain = await verifyDomainForTest(app, project, 'deleted.example', dns);
    await expect(assertCanSend(project.id, 'a@deleted.example')).resolves.toBeDefined();
    const res = await app.request({
      method: 'DELETE',
      url: `/domains/${domain.id}`,
      key: project.secretKey,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { id: domain.id, deleted: true } });
    expect((await sendRefusal(project.id, 'a@deleted.example')).code).toBe('DOMAIN_NOT_VERIFIED');
    expect((await get(domain.id)).status).toBe(404);
    expect(
      (
        await app.request({
          method: 'DELETE',
          url: `/domains/${domain.id}`,
          key: project.secretKey,
        })
      ).status,
    ).toBe(404);
    // The name can be added again, with a new key.
    const again = (await create('deleted.example')).body.data;
    expect(record(again, 'DKIM').value).not.toBe(record(domain, 'DKIM').value);
  });

  it('deletes a domain once: of 50 concurrent DELETEs one answers 200, the rest 404 DOMAIN_NOT_FOUND', async () => {
    const domain = (await create('once.example')).body.data;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        app.request({ method: 'DELETE', url: `/domains/${domain.id}`, key: project.secretKey }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0].body.data).toEqual({ id: domain.id, deleted: true });
    const rest = answers.filter((a) => a.status !== 200);
    expect(rest.map((a) => a.status)).toEqual(Array(49).fill(404));
    expect(new Set(rest.map((a) => a.body.error.code))).toEqual(new Set(['DOMAIN_NOT_FOUND']));
  });

  it('answers 400 for an id that is not a UUID and 404 for an unknown one', async () => {
    const bad = await get('not-a-uuid');
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors).toEqual([expect.objectContaining({ field: 'id' })]);
    const unknown = await get('01900000-0000-7000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('DOMAIN_NOT_FOUND');
  });

  it('documents the endpoints in /openapi.json', async () => {
    const res = await app.request({ method: 'GET', url: '/openapi.json' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining(['/domains', '/domains/{id}', '/domains/{id}/verify']),
    );
    expect(Object.keys(res.body.components.schemas.DomainResponse.properties)).toEqual(
      expect.arrayContaining([
        'id',
        'domain',
        'status',
        'records',
        'lastCheckedAt',
        'verifiedAt',
        'createdAt',
      ]),
    );
  });

  it('refuses senders without a verified domain with DOMAIN_NOT_VERIFIED', async () => {
    for (const from of ['a@never-added.example', 'not-an-address']) {
      const refusal = await sendRefusal(project.id, from);
      expect(refusal.getStatus()).toBe(403);
      expect(refusal.code).toBe('DOMAIN_NOT_VERIFIED');
    }
  });
});
