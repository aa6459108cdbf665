import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { signWebhook } from '../webhooks/webhook-signature';
import {
  isStandardWebhooksSecret,
  parseSendgridKey,
  verifyBasicAuth,
  verifyMailgun,
  verifySendgrid,
  verifyStandardWebhook,
} from './provider-signatures';

describe('provider signatures', () => {
  it('postmark basic auth: both username and password must match', () => {
    const header = (value: string) => ({
      authorization: `Basic ${Buffer.from(value).toString('base64')}`,
    });
    const credentials = { username: 'u', password: 'p:with:colons' };
    expect(verifyBasicAuth(header('u:p:with:colons'), credentials)).toBe(true);
    expect(verifyBasicAuth(header('u:p'), credentials)).toBe(false);
    expect(verifyBasicAuth(header('x:p:with:colons'), credentials)).toBe(false);
    expect(verifyBasicAuth({}, credentials)).toBe(false);
  });

  it('mailgun: hex HMAC-SHA256 of timestamp + token', () => {
    const signature = createHmac('sha256', 'key').update('1700000000tok').digest('hex');
    expect(verifyMailgun({ timestamp: '1700000000', token: 'tok', signature }, 'key')).toBe(true);
    expect(verifyMailgun({ timestamp: '1700000001', token: 'tok', signature }, 'key')).toBe(false);
    expect(verifyMailgun({ timestamp: '1700000000', token: 'tok', signature }, 'other')).toBe(
      false,
    );
    expect(verifyMailgun(undefined, 'key')).toBe(false);
  });

  it('sendgrid: ECDSA P-256 over timestamp + body; only P-256 keys are accepted', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const base64 = publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    const key = parseSendgridKey(base64)!;
    expect(key).not.toBeNull();
    expect(
      parseSendgridKey(publicKey.export({ format: 'pem', type: 'spki' }) as string),
    ).not.toBeNull();
    const body = Buffer.from('[{"event":"bounce"}]');
    const headers = {
      'x-twilio-email-event-webhook-timestamp': '1700000000',
      'x-twilio-email-event-webhook-signature': sign(
        'sha256',
        Buffer.concat([Buffer.from('1700000000'), body]),
        privateKey,
      ).toString('base64'),
    };
    expect(verifySendgrid(headers, body, key)).toBe(true);
    expect(verifySendgrid(headers, Buffer.from('[]'), key)).toBe(false);
    expect(
      verifySendgrid({ ...headers, 'x-twilio-email-event-webhook-timestamp': '1' }, body, key),
    ).toBe(false);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    expect(
      parseSendgridKey(rsa.export({ format: 'der', type: 'spki' }).toString('base64')),
    ).toBeNull();
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).publicKey;
    expect(
      parseSendgridKey(p384.export({ format: 'der', type: 'spki' }).toString('base64')),
    ).toBeNull();
    expect(parseSendgridKey('not a key')).toBeNull();
  });

  it('resend (Standard Webhooks): any listed v1 signature, within 5 minutes, svix- names too', () => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    expect(isStandardWebhooksSecret(secret)).toBe(true);
    expect(isStandardWebhooksSecret('whsec_c2hvcnQ=')).toBe(false);
    const body = Buffer.from('{"type":"email.bounced"}');
    const now = 1_700_000_000;
    const good = signWebhook(secret, 'msg_1', now, body.toString());
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now) };
    expect(
      verifyStandardWebhook(
        { ...headers, 'webhook-signature': `v1,bad ${good}` },
        body,
        secret,
        now,
      ),
    ).toBe('msg_1');
    expect(
      verifyStandardWebhook(
        { 'svix-id': 'msg_1', 'svix-timestamp': String(now), 'svix-signature': good },
        body,
        secret,
        now + 299,
      ),
    ).toBe('msg_1');
    expect(
      verifyStandardWebhook({ ...headers, 'webhook-signature': good }, body, secret, now + 301),
    ).toBeNull();
    expect(
      verifyStandardWebhook(
        { ...headers, 'webhook-signature': good },
        Buffer.from('{}'),
        secret,
        now,
      ),
    ).toBeNull();
  });
});
