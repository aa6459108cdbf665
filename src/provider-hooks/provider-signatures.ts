import {
  createHash,
  createHmac,
  createPublicKey,
  KeyObject,
  timingSafeEqual,
  verify,
} from 'node:crypto';
import { signWebhook } from '../webhooks/webhook-signature';

/** Request headers as Fastify gives them (lower-case names). */
export type Headers = Record<string, string | string[] | undefined>;

/** Standard Webhooks' tolerance for the signed timestamp (replays older than this are refused). */
export const STANDARD_WEBHOOKS_TOLERANCE_SECONDS = 5 * 60;

function header(headers: Headers, name: string): string | null {
  const value = headers[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? (value[0] ?? null) : null;
}

/** Equal in constant time whatever the lengths (both sides hashed first). */
function sameText(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Postmark: HTTP basic auth with the username and password set on the webhook URL. */
export function verifyBasicAuth(
  headers: Headers,
  credentials: { username: string; password: string },
): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header(headers, 'authorization') ?? '');
  if (!match) return false;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  // Both compared, always: which one was wrong is not told by the time taken.
  const user = sameText(decoded.slice(0, colon), credentials.username);
  const password = sameText(decoded.slice(colon + 1), credentials.password);
  return user && password;
}

/** Mailgun: `signature.signature` is hex HMAC-SHA256(signing key, timestamp + token). */
export function verifyMailgun(
  signature: { timestamp?: unknown; token?: unknown; signature?: unknown } | undefined,
  signingKey: string,
): boolean {
  if (!signature) return false;
  const { timestamp, token, signature: given } = signature;
  if (typeof timestamp !== 'string' && typeof timestamp !== 'number') return false;
  if (typeof token !== 'string' || typeof given !== 'string') return false;
  const expected = createHmac('sha256', signingKey).update(`${timestamp}${token}`).digest('hex');
  return sameText(given.toLowerCase(), expected);
}

/** A SendGrid verification key (base64 DER SubjectPublicKeyInfo, or PEM): EC P-256 only. */
export function parseSendgridKey(publicKey: string): KeyObject | null {
  try {
    const trimmed = publicKey.trim();
    const key = trimmed.startsWith('-----BEGIN')
      ? createPublicKey(trimmed)
      : createPublicKey({
          key: Buffer.from(trimmed.replace(/\s+/g, ''), 'base64'),
          format: 'der',
          type: 'spki',
        });
    if (key.asymmetricKeyType !== 'ec') return null;
    return key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? key : null;
  } catch {
    return null;
  }
}

/**
 * SendGrid's signed event webhook: ECDSA P-256 over SHA-256 of the timestamp
 * header followed by the raw body; the signature header is base64 DER.
 */
export function verifySendgrid(headers: Headers, body: Buffer, key: KeyObject): boolean {
  const signature = header(headers, 'x-twilio-email-event-webhook-signature');
  const timestamp = header(headers, 'x-twilio-email-event-webhook-timestamp');
  if (!signature || !timestamp) return false;
  try {
    return verify(
      'sha256',
      Buffer.concat([Buffer.from(timestamp, 'utf8'), body]),
      key,
      Buffer.from(signature, 'base64'),
    );
  } catch {
    return false;
  }
}

/** A Standard Webhooks secret: `whsec_` + base64 of at least 16 bytes. */
export function isStandardWebhooksSecret(secret: string): boolean {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  return match !== null && Buffer.from(match[1], 'base64').length >= 16;
}

/**
 * Resend (Standard Webhooks, as Svix sends them): `webhook-id`,
 * `webhook-timestamp`, `webhook-signature` (or their `svix-` names); the
 * signature header lists `v1,<base64>` values separated by spaces, any one
 * matching is enough (several during a secret rotation). Returns the
 * message id when genuine and recent.
 */
export function verifyStandardWebhook(
  headers: Headers,
  body: Buffer,
  secret: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): string | null {
  const id = header(headers, 'webhook-id') ?? header(headers, 'svix-id');
  const timestamp = header(headers, 'webhook-timestamp') ?? header(headers, 'svix-timestamp');
  const signatures = header(headers, 'webhook-signature') ?? header(headers, 'svix-signature');
  if (!id || !timestamp || !signatures || !/^\d{1,12}$/.test(timestamp)) return null;
  if (Math.abs(nowSeconds - Number(timestamp)) > STANDARD_WEBHOOKS_TOLERANCE_SECONDS) return null;
  const expected = signWebhook(secret, id, Number(timestamp), body.toString('utf8'));
  const genuine = signatures
    .split(' ')
    .filter((candidate) => candidate.startsWith('v1,'))
    .some((candidate) => sameText(candidate, expected));
  return genuine ? id : null;
}
