import { createHmac, timingSafeEqual } from 'node:crypto';

const VERSION = 1;
const MAC_BYTES = 16;

/**
 * Compact signed tokens for links in mail (unsubscribe, open pixel, tracked
 * clicks): version byte + body + HMAC-SHA256 truncated to 128 bits,
 * base64url. The key is derived from APP_SECRET for one purpose only, so a
 * token of one kind never passes as another. Tokens are signed with the
 * current secret and verified under it or any previous one
 * (APP_SECRET_PREVIOUS): links in mail already delivered keep working after
 * a rotation for as long as the old secret stays listed.
 */
export class SignedTokens {
  private readonly keys: Buffer[];

  /** `purpose`: a fixed name such as "unsubscribe"; the key is HMAC(secret, "mailwright:<purpose>:v1"). */
  constructor(purpose: string, appSecret: string, previousSecrets: readonly string[] = []) {
    this.keys = [appSecret, ...previousSecrets].map((secret) =>
      createHmac('sha256', secret).update(`mailwright:${purpose}:v1`).digest(),
    );
  }

  seal(body: Buffer): string {
    const payload = Buffer.concat([Buffer.from([VERSION]), body]);
    return Buffer.concat([payload, mac(payload, this.keys[0])]).toString('base64url');
  }

  /** The body of a genuine token of `minBody`..`maxBody` bytes, or null for anything forged, altered or malformed. */
  open(token: string, minBody: number, maxBody: number): Buffer | null {
    const maxChars = Math.ceil(((1 + maxBody + MAC_BYTES) * 4) / 3);
    if (token.length > maxChars || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
    const raw = Buffer.from(token, 'base64url');
    const bodyBytes = raw.length - 1 - MAC_BYTES;
    if (bodyBytes < minBody || bodyBytes > maxBody || raw[0] !== VERSION) return null;
    // Re-encoding must give the same text: rejects non-canonical base64 variants of a valid token.
    if (raw.toString('base64url') !== token) return null;
    const payload = raw.subarray(0, raw.length - MAC_BYTES);
    const given = raw.subarray(raw.length - MAC_BYTES);
    return this.keys.some((key) => timingSafeEqual(mac(payload, key), given))
      ? payload.subarray(1)
      : null;
  }
}

function mac(payload: Buffer, key: Buffer): Buffer {
  return createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);
}
