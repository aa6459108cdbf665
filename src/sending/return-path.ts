import { createHmac, timingSafeEqual } from 'node:crypto';
import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';

const VERSION = '1';
const MAC_BYTES = 10;
/** Version digit + 16 id bytes + 10 MAC bytes, hex: 53 characters, within the contract's 60. */
const TOKEN = /^1[0-9a-f]{52}$/;

/** What a VERP-style address is for: its key's label and its local part's prefix. */
export interface AddressKind {
  label: string;
  prefix: string;
}

/** The envelope sender of every message: `b-<token>`. */
export const RETURN_PATH_KIND: AddressKind = { label: 'return-path', prefix: 'b-' };
/** The `mailto:` of List-Unsubscribe: `u-<token>`, a key of its own so a return path never unsubscribes. */
export const UNSUBSCRIBE_KIND: AddressKind = { label: 'unsubscribe-mail', prefix: 'u-' };

/**
 * The envelope sender of every message (VERP): `b-<token>@<domain>`, the token
 * naming the email. Hex, because a return path must survive servers that change
 * the case of local parts, and the contract allows only `[a-z0-9]`. An 80-bit
 * MAC is enough: a forger gets one guess per RCPT and the listener refuses it.
 * Signed with APP_SECRET; any previous secret still verifies, so bounces of
 * mail sent before a rotation still find their email.
 */
export class ReturnPathTokens {
  private readonly keys: Buffer[];
  private readonly prefix: string;

  /** `kind`: the return path by default; UNSUBSCRIBE_KIND for List-Unsubscribe's mailto address. */
  constructor(
    appSecret: string,
    previousSecrets: readonly string[] = [],
    kind: AddressKind = RETURN_PATH_KIND,
  ) {
    this.prefix = kind.prefix;
    this.keys = [appSecret, ...previousSecrets].map((secret) =>
      createHmac('sha256', secret).update(`mailwright:${kind.label}:v1`).digest(),
    );
  }

  token(emailId: string): string {
    const id = Buffer.from(parseUuid(emailId));
    return VERSION + id.toString('hex') + mac(id, this.keys[0]).toString('hex');
  }

  /** The email a genuine token names, or null for anything forged, altered or malformed. */
  verify(token: string): string | null {
    const lower = token.toLowerCase();
    if (!TOKEN.test(lower)) return null;
    const id = Buffer.from(lower.slice(1, 33), 'hex');
    const given = Buffer.from(lower.slice(33), 'hex');
    return this.keys.some((key) => timingSafeEqual(mac(id, key), given)) ? stringifyUuid(id) : null;
  }

  address(emailId: string, domain: string): string {
    return `${this.prefix}${this.token(emailId)}@${domain}`;
  }

  /** The email named by an address of this kind (`b-<token>@any.domain`, any case), or null. */
  verifyAddress(address: string): string | null {
    const at = address.lastIndexOf('@');
    const local = (at < 0 ? address : address.slice(0, at)).toLowerCase();
    return local.startsWith(this.prefix) ? this.verify(local.slice(this.prefix.length)) : null;
  }
}

function mac(id: Buffer, key: Buffer): Buffer {
  return createHmac('sha256', key).update(id).digest().subarray(0, MAC_BYTES);
}
