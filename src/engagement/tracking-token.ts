import { parse as parseUuid } from 'uuid';
import { SignedTokens } from '../common/crypto/signed-tokens';

/** What a click token names: the email and the exact link that was signed. */
export interface ClickTarget {
  emailId: string;
  url: string;
}

/** Links longer than this (UTF-8 bytes) are left as they are: the token would make an unwieldy URL. */
export const MAX_TRACKED_URL_BYTES = 2048;

/**
 * Signed tokens of the open pixel (`/t/o/{token}`) and of tracked links
 * (`/t/c/{token}`): version byte + the email's raw UUID (+ the link's UTF-8
 * bytes for clicks) + HMAC-SHA256 truncated to 128 bits, base64url
 * (common/crypto/signed-tokens.ts). A click
 * token carries the URL itself, so the redirect needs no database and can
 * only go where a signature says. Opens and clicks have keys of their own,
 * derived from APP_SECRET (and verified under APP_SECRET_PREVIOUS too, like
 * unsubscribe tokens): a token of one kind never passes as another.
 */
export class TrackingTokens {
  private readonly opens: SignedTokens;
  private readonly clicks: SignedTokens;

  constructor(appSecret: string, previousSecrets: readonly string[] = []) {
    this.opens = new SignedTokens('track-open', appSecret, previousSecrets);
    this.clicks = new SignedTokens('track-click', appSecret, previousSecrets);
  }

  signOpen(emailId: string): string {
    return this.opens.seal(Buffer.from(parseUuid(emailId)));
  }

  /** null when the URL is too long to track. */
  signClick(emailId: string, url: string): string | null {
    const bytes = Buffer.from(url, 'utf8');
    if (bytes.length > MAX_TRACKED_URL_BYTES) return null;
    return this.clicks.seal(Buffer.concat([Buffer.from(parseUuid(emailId)), bytes]));
  }

  /** The email of a genuine open token, or null for anything forged, altered or malformed. */
  verifyOpen(token: string): string | null {
    const body = this.opens.open(token, 16, 16);
    return body ? uuidText(body) : null;
  }

  /** The email and link of a genuine click token, or null. */
  verifyClick(token: string): ClickTarget | null {
    const body = this.clicks.open(token, 17, 16 + MAX_TRACKED_URL_BYTES);
    if (!body) return null;
    return { emailId: uuidText(body.subarray(0, 16)), url: body.subarray(16).toString('utf8') };
  }
}

/**
 * The text form of 16 UUID bytes from a genuine token (signed from a parsed
 * UUID, so valid by construction): uuid's `stringify` validates its output
 * again, a tenth of a token check on the pixel's hot path.
 */
function uuidText(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
