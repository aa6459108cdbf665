import { createHmac, timingSafeEqual } from 'node:crypto';
import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';

/** What a click token names: the email and the exact link that was signed. */
export interface ClickTarget {
  emailId: string;
  url: string;
}

const VERSION = 1;
const MAC_BYTES = 16;
/** Links longer than this (UTF-8 bytes) are left as they are: the token would make an unwieldy URL. */
export const MAX_TRACKED_URL_BYTES = 2048;

/**
 * Signed tokens of the open pixel (`/t/o/{token}`) and of tracked links
 * (`/t/c/{token}`): version byte + the email's raw UUID (+ the link's UTF-8
 * bytes for clicks) + HMAC-SHA256 truncated to 128 bits, base64url. A click
 * token carries the URL itself, so the redirect needs no database and can
 * only go where a signature says. Opens and clicks have keys of their own,
 * derived from APP_SECRET (and verified under APP_SECRET_PREVIOUS too, like
 * unsubscribe tokens): a token of one kind never passes as another.
 */
export class TrackingTokens {
  private readonly openKeys: Buffer[];
  private readonly clickKeys: Buffer[];

  constructor(appSecret: string, previousSecrets: readonly string[] = []) {
    this.openKeys = [appSecret, ...previousSecrets].map((s) => deriveKey(s, 'open'));
    this.clickKeys = [appSecret, ...previousSecrets].map((s) => deriveKey(s, 'click'));
  }

  signOpen(emailId: string): string {
    return seal(Buffer.concat([Buffer.from([VERSION]), Buffer.from(parseUuid(emailId))]), this.openKeys[0]);
  }

  /** null when the URL is too long to track. */
  signClick(emailId: string, url: string): string | null {
    const bytes = Buffer.from(url, 'utf8');
    if (bytes.length > MAX_TRACKED_URL_BYTES) return null;
    return seal(Buffer.concat([Buffer.from([VERSION]), Buffer.from(parseUuid(emailId)), bytes]), this.clickKeys[0]);
  }

  /** The email of a genuine open token, or null for anything forged, altered or malformed. */
  verifyOpen(token: string): string | null {
    const payload = open(token, this.openKeys, 17, 17);
    return payload ? stringifyUuid(payload.subarray(1, 17)) : null;
  }

  /** The email and link of a genuine click token, or null. */
  verifyClick(token: string): ClickTarget | null {
    const payload = open(token, this.clickKeys, 18, 17 + MAX_TRACKED_URL_BYTES);
    if (!payload) return null;
    return { emailId: stringifyUuid(payload.subarray(1, 17)), url: payload.subarray(17).toString('utf8') };
  }
}

function deriveKey(secret: string, kind: 'open' | 'click'): Buffer {
  return createHmac('sha256', secret).update(`mailwright:track-${kind}:v1`).digest();
}

function mac(payload: Buffer, key: Buffer): Buffer {
  return createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);
}

function seal(payload: Buffer, key: Buffer): string {
  return Buffer.concat([payload, mac(payload, key)]).toString('base64url');
}

function open(token: string, keys: Buffer[], minPayload: number, maxPayload: number): Buffer | null {
  const maxChars = Math.ceil(((maxPayload + MAC_BYTES) * 4) / 3);
  if (token.length > maxChars || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  const raw = Buffer.from(token, 'base64url');
  if (raw.length < minPayload + MAC_BYTES || raw.length > maxPayload + MAC_BYTES || raw[0] !== VERSION) return null;
  // Re-encoding must give the same text: rejects non-canonical variants of a valid token.
  if (raw.toString('base64url') !== token) return null;
  const payload = raw.subarray(0, raw.length - MAC_BYTES);
  const given = raw.subarray(raw.length - MAC_BYTES);
  return keys.some((key) => timingSafeEqual(mac(payload, key), given)) ? payload : null;
}
