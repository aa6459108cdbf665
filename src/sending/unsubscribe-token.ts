import { createHmac, timingSafeEqual } from 'node:crypto';
import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';

/** What an unsubscribe link identifies. `emailId` is the message it came in, when there is one. */
export interface UnsubscribeTarget {
  projectId: string;
  contactId: string;
  emailId: string | null;
}

const VERSION = 1;
const MAC_BYTES = 16;
const NIL = '00000000-0000-0000-0000-000000000000';

/**
 * Compact signed tokens: version byte + three raw UUIDs + a truncated
 * HMAC-SHA256 (128 bits), base64url. The key is derived from APP_SECRET for
 * this purpose only, so a token of another kind can never pass as one.
 * Tokens are signed with the current secret and verified under it or any
 * previous one (APP_SECRET_PREVIOUS): links in mail already delivered keep
 * working after a rotation for as long as the old secret stays listed.
 */
export class UnsubscribeTokens {
  private readonly key: Buffer;
  private readonly previousKeys: Buffer[];

  constructor(appSecret: string, previousSecrets: readonly string[] = []) {
    this.key = unsubscribeKey(appSecret);
    this.previousKeys = previousSecrets.map(unsubscribeKey);
  }

  sign(target: UnsubscribeTarget): string {
    const payload = Buffer.concat([
      Buffer.from([VERSION]),
      Buffer.from(parseUuid(target.projectId)),
      Buffer.from(parseUuid(target.contactId)),
      Buffer.from(parseUuid(target.emailId ?? NIL)),
    ]);
    return Buffer.concat([payload, this.mac(payload, this.key)]).toString('base64url');
  }

  /** The target of a genuine token, or null for anything forged, altered or malformed. */
  verify(token: string): UnsubscribeTarget | null {
    if (!/^[A-Za-z0-9_-]{60,100}$/.test(token)) return null;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length !== 1 + 48 + MAC_BYTES || raw[0] !== VERSION) return null;
    const payload = raw.subarray(0, 49);
    const mac = raw.subarray(49);
    const keys = [this.key, ...this.previousKeys];
    if (!keys.some((key) => timingSafeEqual(this.mac(payload, key), mac))) return null;
    // Re-encoding must give the same text: rejects non-canonical base64 variants of a valid token.
    if (raw.toString('base64url') !== token) return null;
    const emailId = stringifyUuid(payload.subarray(33, 49));
    return {
      projectId: stringifyUuid(payload.subarray(1, 17)),
      contactId: stringifyUuid(payload.subarray(17, 33)),
      emailId: emailId === NIL ? null : emailId,
    };
  }

  private mac(payload: Buffer, key: Buffer): Buffer {
    return createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);
  }
}

function unsubscribeKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('mailwright:unsubscribe:v1').digest();
}
