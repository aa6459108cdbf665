import { execFileSync } from 'node:child_process';
import { createHmac, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { SecretBox } from '../src/common/crypto/secret-box';
import {
  ProviderCredentials,
  UnreadableProviderCredentialsError,
} from '../src/provider-hooks/provider-credentials';
import { PROVIDER_CREDENTIALS_BOX_LABEL } from '../src/provider-hooks/provider-hooks.constants';
import { ProviderHooksRepository } from '../src/provider-hooks/provider-hooks.repository';
import { ProjectsService } from '../src/projects/projects.service';
import { ReturnPathTokens } from '../src/sending/return-path';
import { signWebhook } from '../src/webhooks/webhook-signature';
import { HttpReceiver } from './support/http-receiver';
import {
  SENDER_DOMAIN,
  SendingTest,
  startSendingTest,
  waitForEmailStatus,
} from './support/sending';
import { verifyDomainForTest } from './support/domains';
import { TestProject } from './support/test-app';

const OTHER_DOMAIN = 'other-project.test';
const NEW_SECRET = 'a-new-app-secret-a-new-app-secret-0123456789';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A self-signed RSA certificate and its key, as SNS signs with (openssl, present on the test machines). */
function makeCertificate(): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mw-sns-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=sns.test',
    ],
    { stdio: 'ignore' },
  );
  return {
    certPem: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'),
  };
}

/** The string SNS signs (Notification or SubscriptionConfirmation). */
function snsStringToSign(message: Json): string {
  const fields =
    message.Type === 'Notification'
      ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
      : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
  return fields
    .filter((f) => typeof message[f] === 'string')
    .map((f) => `${f}\n${message[f]}\n`)
    .join('');
}

/**
 * Provider webhooks end to end (real app over real HTTP, Postgres, Redis, an
 * SMTP server that accepts the mail, and for SES a loopback HTTP server that
 * serves the SNS signing certificate): each provider's signed payload marks
 * the email it names, a wrong signature is 401 and changes nothing, another
 * project's email is never touched, and a repeated payload changes nothing.
 */
describe('provider webhooks (e2e)', () => {
  let t: SendingTest;
  let other: TestProject;
  let base: string;
  let sns: HttpReceiver;
  let cert: { certPem: string; keyPem: string };
  let db: DataSource;

  const req = (method: 'GET' | 'PUT', url: string, body?: unknown, key = t.project.secretKey) =>
    t.app.request({ method, url, key, body });
  const email = async (id: string, key = t.project.secretKey) =>
    (await req('GET', `/emails/${id}`, undefined, key)).body.data as Json;

  async function delivered(to: string, project: TestProject = t.project): Promise<Json> {
    const res = await t.app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: {
        to,
        from: `hello@${project === t.project ? SENDER_DOMAIN : OTHER_DOMAIN}`,
        subject: 'Hi',
        body: '<p>Hi</p>',
      },
    });
    expect(res.status).toBe(200);
    return waitForEmailStatus(t.app, project.secretKey, res.body.data.emails[0].id, ['SENT']);
  }

  /** PUT the credentials, answer the path of the URL to post to (on this test's listening app). */
  async function configure(provider: string, body: unknown, project = t.project): Promise<string> {
    const res = await req('PUT', `/project/inbound/${provider}`, body, project.secretKey);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['provider', 'url']);
    const url = new URL(res.body.data.url);
    expect(url.origin).toBe('https://mail.example.test');
    expect(url.pathname).toMatch(new RegExp(`^/inbound/${provider}/[A-Za-z0-9_-]{32}$`));
    return url.pathname;
  }

  async function post(
    path: string,
    body: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  beforeAll(async () => {
    cert = makeCertificate();
    sns = await new HttpReceiver().start();
    sns.fallback = { status: 200, body: cert.certPem };
    t = await startSendingTest('Provider webhooks', {
      SES_SNS_HOST_PATTERN: '127.0.0.1',
      SES_SNS_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    other = await t.app.createProject('Other project');
    await verifyDomainForTest(t.app, other, OTHER_DOMAIN, t.dns);
    await t.app.app.listen({ port: 0, host: '127.0.0.1' });
    base = (await t.app.app.getUrl()).replace('[::1]', '127.0.0.1');
    db = t.app.app.get(DataSource);
  });

  afterAll(async () => {
    await t?.close();
    await sns?.close();
  });

  describe('PUT /project/inbound/{provider}', () => {
    it('keeps the URL when credentials are replaced, stores them sealed and never answers them', async () => {
      const first = await configure('mailgun', { secret: 'key-first-signing-key' });
      const again = await configure('mailgun', { secret: 'key-second-signing-key' });
      expect(again).toBe(first);
      const [row] = await db.query(
        `SELECT credentials_sealed FROM provider_hooks WHERE project_id = $1 AND provider = 'mailgun'`,
        [t.project.id],
      );
      const sealed = Buffer.from(row.credentials_sealed, 'base64');
      expect(sealed.includes(Buffer.from('key-second'))).toBe(false);
      // Another project's URL for the same provider is its own.
      expect(await configure('mailgun', { secret: 'key-other' }, other)).not.toBe(first);
    });

    it('validates per provider: missing, malformed and foreign fields are 422; an unknown provider is 400', async () => {
      const postmark = await req('PUT', '/project/inbound/postmark', { username: 'u' });
      expect(postmark.status).toBe(422);
      expect(postmark.body.error.errors).toEqual([
        expect.objectContaining({ field: 'password', code: 'required' }),
      ]);
      const ses = await req('PUT', '/project/inbound/ses', { secret: 'x' });
      expect(ses.status).toBe(422);
      expect(ses.body.error.errors[0]).toMatchObject({
        field: 'secret',
        code: 'unrecognized_keys',
      });
      const sendgrid = await req('PUT', '/project/inbound/sendgrid', { publicKey: 'bm90IGEga2V5' });
      expect(sendgrid.status).toBe(422);
      expect(sendgrid.body.error.errors[0]).toMatchObject({ field: 'publicKey' });
      const resend = await req('PUT', '/project/inbound/resend', { secret: 'plain' });
      expect(resend.status).toBe(422);
      const unknown = await req('PUT', '/project/inbound/sparkpost', {});
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatchObject({ code: 'BAD_REQUEST' });
      expect(unknown.body.error.errors[0].field).toBe('provider');
      // ses needs nothing: a PUT without a body is fine.
      const bare = await t.app.request({
        method: 'PUT',
        url: '/project/inbound/ses',
        key: t.project.secretKey,
      });
      expect(bare.status).toBe(200);
      const noKey = await t.app.request({ method: 'PUT', url: '/project/inbound/ses', body: {} });
      expect(noKey.status).toBe(401);
    });
  });

  it('`secrets rotate` re-seals the credentials under a new APP_SECRET, or writes nothing when one does not open', async () => {
    const path = await configure('postmark', { username: 'rot', password: 'rotate-me' });
    const sealedNow = async () =>
      (
        await db.query(
          `SELECT credentials_sealed AS s FROM provider_hooks WHERE project_id = $1 AND provider = 'postmark'`,
          [t.project.id],
        )
      )[0].s as string;
    const rotator = (secret: string, previous: string[]) =>
      new ProviderCredentials(
        db,
        SecretBox.fromSecret(secret, PROVIDER_CREDENTIALS_BOX_LABEL, previous),
        t.app.app.get(ProviderHooksRepository),
      );
    const before = await sealedNow();
    await expect(rotator(NEW_SECRET, []).rotate()).rejects.toThrow(
      UnreadableProviderCredentialsError,
    );
    expect(await sealedNow()).toBe(before);

    const rotated = await rotator(NEW_SECRET, [t.app.config.appSecret]).rotate();
    expect(rotated.resealed).toBeGreaterThanOrEqual(1);
    expect(await sealedNow()).not.toBe(before);
    // The running app (the old secret alone) no longer opens them; rotating back restores them.
    await rotator(t.app.config.appSecret, [NEW_SECRET]).rotate();
    const auth = `Basic ${Buffer.from('rot:rotate-me').toString('base64')}`;
    const res = await post(path, JSON.stringify({ RecordType: 'Delivery' }), {
      authorization: auth,
    });
    expect(res.status).toBe(200);
  });

  describe('POST /inbound/{provider}/{inboundId}', () => {
    it('a disabled project answers 403 PROJECT_DISABLED (the provider retries) and applies nothing', async () => {
      const disabled = await t.app.createProject('Disabled later');
      const path = await configure(
        'postmark',
        { username: 'd', password: 'disabled-pass' },
        disabled,
      );
      await t.app.app.get(ProjectsService).setEnabled(disabled.id, false);
      const res = await post(path, JSON.stringify({ RecordType: 'Delivery' }), {
        authorization: `Basic ${Buffer.from('d:disabled-pass').toString('base64')}`,
      });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('PROJECT_DISABLED');
    });

    it('an unknown URL is 401 with the error envelope; an unknown provider 400', async () => {
      const res = await post('/inbound/postmark/not-a-real-inbound-id', '{}');
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({
        success: false,
        error: { code: 'INVALID_SIGNATURE', statusCode: 401 },
      });
      expect(res.body.error.suggestion).toBeTruthy();
      expect((await post('/inbound/sparkpost/x', '{}')).status).toBe(400);
    });

    it('postmark: basic auth; HardBounce → BOUNCED (found by recipient); wrong password 401; twice changes nothing', async () => {
      const path = await configure('postmark', { username: 'hooks', password: 's3cret-pass' });
      const sent = await delivered('pm-hard@example.org');
      const payload = JSON.stringify({
        RecordType: 'Bounce',
        ID: 4323372036,
        Type: 'HardBounce',
        TypeCode: 1,
        Name: 'Hard bounce',
        MessageID: randomUUID(),
        Description:
          'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
        Details: 'smtp;550 5.1.1 The email account that you tried to reach does not exist.',
        Email: 'PM-Hard@example.org',
        From: `hello@${SENDER_DOMAIN}`,
        BouncedAt: new Date().toISOString(),
      });
      const basic = (user: string, pass: string) => ({
        authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`,
      });

      const wrong = await post(path, payload, basic('hooks', 'wrong'));
      expect(wrong.status).toBe(401);
      expect((await post(path, payload)).status).toBe(401);
      expect((await email(sent.id)).status).toBe('SENT');

      const ok = await post(path, payload, basic('hooks', 's3cret-pass'));
      expect(ok.status).toBe(200);
      expect(ok.body.data).toMatchObject({ received: 1, applied: 1 });
      const after = await email(sent.id);
      expect(after).toMatchObject({
        status: 'BOUNCED',
        bounce: { type: 'hard', source: 'postmark' },
      });
      expect(after.bounce.diagnostic).toContain('550 5.1.1');

      const twice = await post(path, payload, basic('hooks', 's3cret-pass'));
      expect(twice.body.data).toMatchObject({ received: 1, applied: 0, duplicate: 1 });
      expect(await email(sent.id)).toEqual(after);

      // A delivery event is not a report: answered 200, nothing recorded.
      const delivery = await post(
        path,
        JSON.stringify({ RecordType: 'Delivery', MessageID: 'x', Recipient: 'a@b.c' }),
        basic('hooks', 's3cret-pass'),
      );
      expect(delivery).toMatchObject({ status: 200, body: { data: { received: 0 } } });
    });

    it('mailgun: signing key; complained → COMPLAINED (by Message-ID), contact unsubscribed; bad signature 401', async () => {
      const signingKey = 'key-7f0e9d2c1b0a99887766554433221100';
      const path = await configure('mailgun', { secret: signingKey });
      const sent = await delivered('mg-spam@example.org');
      const body = (signature: string, timestamp: string, token: string) =>
        JSON.stringify({
          signature: { timestamp, token, signature },
          'event-data': {
            event: 'complained',
            id: 'ncV2XwymRUKbPek_MIM-Gw',
            timestamp: Date.now() / 1000,
            recipient: 'mg-spam@example.org',
            message: { headers: { 'message-id': `${sent.id}@${SENDER_DOMAIN}` } },
          },
        });
      const timestamp = String(Math.floor(Date.now() / 1000));
      const token = randomBytes(25).toString('hex');
      const good = createHmac('sha256', signingKey)
        .update(timestamp + token)
        .digest('hex');
      const bad = createHmac('sha256', 'key-another')
        .update(timestamp + token)
        .digest('hex');

      expect((await post(path, body(bad, timestamp, token))).status).toBe(401);
      expect((await email(sent.id)).status).toBe('SENT');

      const ok = await post(path, body(good, timestamp, token));
      expect(ok).toMatchObject({ status: 200, body: { data: { received: 1, applied: 1 } } });
      const after = await email(sent.id);
      expect(after.status).toBe('COMPLAINED');
      expect(after.complainedAt).not.toBeNull();
      expect(await t.contact(sent.contactId)).toMatchObject({
        subscribed: false,
        suppressed: true,
      });
    });

    it('mailgun: failed with severity temporary is a soft bounce; permanent a hard one', async () => {
      const signingKey = 'key-soft-and-hard-0123456789';
      const path = await configure('mailgun', { secret: signingKey });
      const sent = await delivered('mg-soft@example.org');
      const signed = (eventData: Json) => {
        const timestamp = String(Math.floor(Date.now() / 1000));
        const token = randomBytes(25).toString('hex');
        return JSON.stringify({
          signature: {
            timestamp,
            token,
            signature: createHmac('sha256', signingKey)
              .update(timestamp + token)
              .digest('hex'),
          },
          'event-data': eventData,
        });
      };
      const failed = (id: string, severity: string, code: number, enhanced: string) => ({
        event: 'failed',
        id,
        severity,
        recipient: 'mg-soft@example.org',
        timestamp: Date.now() / 1000,
        'delivery-status': { code, 'enhanced-code': enhanced, message: `${code} ${enhanced} no` },
        message: { headers: { 'message-id': `${sent.id}@${SENDER_DOMAIN}` } },
      });
      expect((await post(path, signed(failed('e-soft', 'temporary', 452, '4.2.2')))).status).toBe(
        200,
      );
      expect(await email(sent.id)).toMatchObject({
        status: 'SENT',
        bounce: { type: 'soft', status: '4.2.2', source: 'mailgun' },
      });
      expect((await post(path, signed(failed('e-hard', 'permanent', 550, '5.1.1')))).status).toBe(
        200,
      );
      expect(await email(sent.id)).toMatchObject({
        status: 'BOUNCED',
        bounce: { type: 'hard', status: '5.1.1', source: 'mailgun' },
      });
    });

    it('sendgrid: signed event webhook (ECDSA P-256); bounce → BOUNCED, spamreport → COMPLAINED; a tampered body 401', async () => {
      const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      const path = await configure('sendgrid', {
        publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
      });
      const bounced = await delivered('sg-hard@example.org');
      const spam = await delivered('sg-spam@example.org');
      const payload = JSON.stringify([
        { email: 'sg-hard@example.org', event: 'processed', sg_event_id: 'p1' },
        {
          email: 'sg-hard@example.org',
          timestamp: Math.floor(Date.now() / 1000),
          'smtp-id': `<${bounced.id}@${SENDER_DOMAIN}>`,
          event: 'bounce',
          type: 'bounce',
          status: '5.1.1',
          reason: '550 5.1.1 The email account that you tried to reach does not exist.',
          sg_event_id: 'c2VuZGdyaWQtYm91bmNl',
          sg_message_id: 'abc.filter0001',
        },
        {
          email: 'sg-spam@example.org',
          timestamp: Math.floor(Date.now() / 1000),
          event: 'spamreport',
          sg_event_id: 'c2VuZGdyaWQtc3BhbQ',
        },
      ]);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = sign('sha256', Buffer.from(timestamp + payload), privateKey).toString(
        'base64',
      );
      const headers = {
        'x-twilio-email-event-webhook-signature': signature,
        'x-twilio-email-event-webhook-timestamp': timestamp,
      };

      const tampered = await post(path, payload.replace('5.1.1', '5.1.2'), headers);
      expect(tampered.status).toBe(401);
      expect((await post(path, payload)).status).toBe(401);
      expect((await email(bounced.id)).status).toBe('SENT');

      const ok = await post(path, payload, headers);
      expect(ok).toMatchObject({ status: 200, body: { data: { received: 2, applied: 2 } } });
      expect(await email(bounced.id)).toMatchObject({
        status: 'BOUNCED',
        bounce: { type: 'hard', status: '5.1.1', source: 'sendgrid' },
      });
      expect((await email(spam.id)).status).toBe('COMPLAINED');
    });

    it('resend: Standard Webhooks secret; email.bounced → BOUNCED; a wrong or stale signature 401', async () => {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const path = await configure('resend', { secret });
      const sent = await delivered('rs-hard@example.org');
      const payload = JSON.stringify({
        type: 'email.bounced',
        created_at: new Date().toISOString(),
        data: {
          email_id: randomUUID(),
          from: `hello@${SENDER_DOMAIN}`,
          to: ['rs-hard@example.org'],
          subject: 'Hi',
          created_at: new Date().toISOString(),
          bounce: {
            message: 'The recipient address does not exist',
            subType: 'General',
            type: 'Permanent',
          },
        },
      });
      const id = `msg_${randomBytes(8).toString('hex')}`;
      const now = Math.floor(Date.now() / 1000);
      const headers = (key: string, timestamp: number) => ({
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(key, id, timestamp, payload),
      });

      const other = `whsec_${randomBytes(24).toString('base64')}`;
      expect((await post(path, payload, headers(other, now))).status).toBe(401);
      expect((await post(path, payload, headers(secret, now - 3600))).status).toBe(401);
      expect((await email(sent.id)).status).toBe('SENT');

      const ok = await post(path, payload, headers(secret, now));
      expect(ok).toMatchObject({ status: 200, body: { data: { received: 1, applied: 1 } } });
      expect(await email(sent.id)).toMatchObject({
        status: 'BOUNCED',
        bounce: { type: 'hard', source: 'resend' },
      });
    });

    describe('ses (SNS)', () => {
      let path: string;
      const certUrl = () => `${sns.url}/SimpleNotificationService-test.pem`;

      function snsMessage(fields: Json, version: '1' | '2' = '1'): Json {
        const message: Json = {
          MessageId: randomUUID(),
          TopicArn: 'arn:aws:sns:us-east-1:123456789012:ses-bounces',
          Timestamp: new Date().toISOString(),
          SignatureVersion: version,
          SigningCertURL: certUrl(),
          ...fields,
        };
        message.Signature = sign(
          version === '1' ? 'RSA-SHA1' : 'RSA-SHA256',
          Buffer.from(snsStringToSign(message)),
          cert.keyPem,
        ).toString('base64');
        return message;
      }

      /** SNS posts its JSON as text/plain. */
      const postSns = (message: Json) =>
        post(path, JSON.stringify(message), { 'content-type': 'text/plain; charset=UTF-8' });

      beforeAll(async () => {
        path = await configure('ses', {});
      });

      it('confirms a subscription by visiting its SubscribeURL on an allowed host', async () => {
        const before = sns.requests.length;
        const res = await postSns(
          snsMessage({
            Type: 'SubscriptionConfirmation',
            Token: 'token-123',
            Message: 'You have chosen to subscribe to the topic',
            SubscribeURL: `${sns.url}/?Action=ConfirmSubscription&Token=token-123`,
          }),
        );
        expect(res.status).toBe(200);
        const visited = sns.requests.slice(before).map((r) => r.path);
        expect(visited).toContain('/?Action=ConfirmSubscription&Token=token-123');
      });

      it('refuses a certificate URL off SES_SNS_HOST_PATTERN (401) and fetches nothing there', async () => {
        const message = snsMessage({ Type: 'Notification', Message: '{}' });
        message.SigningCertURL = `http://localhost:${sns.port}/SimpleNotificationService-test.pem`;
        const before = sns.requests.length;
        expect((await postSns(message)).status).toBe(401);
        expect(sns.requests.length).toBe(before);
      });

      it('Permanent bounce (SignatureVersion 1) → BOUNCED; Complaint (version 2) → COMPLAINED; altered → 401', async () => {
        const sent = await delivered('ses-hard@example.org');
        const bounce = snsMessage({
          Type: 'Notification',
          Message: JSON.stringify({
            notificationType: 'Bounce',
            bounce: {
              bounceType: 'Permanent',
              bounceSubType: 'General',
              bouncedRecipients: [
                {
                  emailAddress: 'ses-hard@example.org',
                  action: 'failed',
                  status: '5.1.1',
                  diagnosticCode: 'smtp; 550 5.1.1 user unknown',
                },
              ],
              timestamp: new Date().toISOString(),
              feedbackId: `0100-${randomUUID()}`,
            },
            mail: {
              timestamp: new Date().toISOString(),
              messageId: '0100018c-ses-own-id',
              source: `hello@${SENDER_DOMAIN}`,
              destination: ['ses-hard@example.org'],
              commonHeaders: { messageId: `<${sent.id}@${SENDER_DOMAIN}>` },
            },
          }),
        });
        const altered = { ...bounce, Message: bounce.Message.replace('5.1.1', '4.4.7') };
        expect((await postSns(altered)).status).toBe(401);
        expect((await postSns({ ...bounce, Signature: 'AAAA' })).status).toBe(401);
        expect((await email(sent.id)).status).toBe('SENT');

        const ok = await postSns(bounce);
        expect(ok).toMatchObject({ status: 200, body: { data: { received: 1, applied: 1 } } });
        expect(await email(sent.id)).toMatchObject({
          status: 'BOUNCED',
          bounce: {
            type: 'hard',
            status: '5.1.1',
            diagnostic: 'smtp; 550 5.1.1 user unknown',
            source: 'ses',
          },
        });
        // SNS delivers at least once: the same message again changes nothing.
        expect((await postSns(bounce)).body.data).toMatchObject({ duplicate: 1, applied: 0 });

        const complained = await delivered('ses-spam@example.org');
        const complaint = snsMessage(
          {
            Type: 'Notification',
            Message: JSON.stringify({
              notificationType: 'Complaint',
              complaint: {
                complainedRecipients: [{ emailAddress: 'ses-spam@example.org' }],
                timestamp: new Date().toISOString(),
                feedbackId: `0100-${randomUUID()}`,
                complaintFeedbackType: 'abuse',
              },
              mail: { messageId: '0100018c-other', destination: ['ses-spam@example.org'] },
            }),
          },
          '2',
        );
        expect((await postSns(complaint)).body.data).toMatchObject({ applied: 1 });
        expect((await email(complained.id)).status).toBe('COMPLAINED');
      });

      it('a report naming another project’s email changes nothing there (kept as unmatched)', async () => {
        const theirs = await delivered('theirs@example.org', other);
        const res = await postSns(
          snsMessage({
            Type: 'Notification',
            Message: JSON.stringify({
              notificationType: 'Bounce',
              bounce: {
                bounceType: 'Permanent',
                bouncedRecipients: [{ emailAddress: 'theirs@example.org', status: '5.1.1' }],
                feedbackId: `0100-${randomUUID()}`,
              },
              mail: { commonHeaders: { messageId: `<${theirs.id}@${OTHER_DOMAIN}>` } },
            }),
          }),
        );
        expect(res).toMatchObject({ status: 200, body: { data: { received: 1, unmatched: 1 } } });
        expect((await email(theirs.id, other.secretKey)).status).toBe('SENT');
        expect(await t.contact(theirs.contactId)).toBeUndefined();
      });

      it('finds the email by its return path (mail.source) before the recipient’s latest email', async () => {
        const older = await delivered('ses-rp@example.org');
        const latest = await delivered('ses-rp@example.org');
        const returnPath = new ReturnPathTokens(t.app.config.appSecret).address(
          older.id,
          `bounces.${SENDER_DOMAIN}`,
        );
        const res = await postSns(
          snsMessage({
            Type: 'Notification',
            Message: JSON.stringify({
              notificationType: 'Bounce',
              bounce: {
                bounceType: 'Permanent',
                bouncedRecipients: [{ emailAddress: 'ses-rp@example.org', status: '5.1.1' }],
                feedbackId: `0100-${randomUUID()}`,
              },
              mail: { source: returnPath, messageId: '0100018c-ses' },
            }),
          }),
        );
        expect(res.body.data).toMatchObject({ applied: 1 });
        expect((await email(older.id)).status).toBe('BOUNCED');
        expect((await email(latest.id)).status).toBe('SENT');
      });

      it('Transient → soft, DeliveryDelay → email.delayed, Delivery → ignored', async () => {
        const sent = await delivered('ses-soft@example.org');
        const notification = (message: Json) =>
          postSns(snsMessage({ Type: 'Notification', Message: JSON.stringify(message) }));
        const mail = { commonHeaders: { messageId: `<${sent.id}@${SENDER_DOMAIN}>` } };
        await notification({
          notificationType: 'DeliveryDelay',
          mail,
          deliveryDelay: {
            delayType: 'MailboxFull',
            delayedRecipients: [
              { emailAddress: 'ses-soft@example.org', status: '4.2.2', diagnosticCode: 'full' },
            ],
          },
        });
        await notification({
          notificationType: 'Bounce',
          mail,
          bounce: {
            bounceType: 'Transient',
            bouncedRecipients: [{ emailAddress: 'ses-soft@example.org', status: '4.4.7' }],
            feedbackId: `0100-${randomUUID()}`,
          },
        });
        const delivery = await notification({ notificationType: 'Delivery', mail });
        expect(delivery.body.data.received).toBe(0);
        expect(await email(sent.id)).toMatchObject({
          status: 'SENT',
          bounce: { type: 'soft', status: '4.4.7', source: 'ses' },
        });
        const delayed = await req('GET', `/events?contactId=${sent.contactId}&name=email.delayed`);
        expect(delayed.body.data.items).toHaveLength(1);
      });
    });
  });
});
