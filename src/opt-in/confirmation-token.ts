import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';
import { SignedTokens } from '../common/crypto/signed-tokens';

/** A confirmation link is good for this long after it was sent. */
export const CONFIRMATION_TTL_MS = 30 * 24 * 3_600_000;

/** What a confirmation link names: the contact, and when the link was issued. */
export interface ConfirmationTarget {
  projectId: string;
  contactId: string;
  issuedAt: Date;
}

const BODY_BYTES = 40;

/**
 * Double opt-in confirmation tokens (common/crypto/signed-tokens.ts, purpose
 * "confirm": an unsubscribe or tracking token never passes as one): the two
 * raw UUIDs and the issue time in milliseconds, which both bounds the link's
 * life and tells a used link from a fresh one.
 */
export class ConfirmationTokens {
  private readonly tokens: SignedTokens;

  constructor(appSecret: string, previousSecrets: readonly string[] = []) {
    this.tokens = new SignedTokens('confirm', appSecret, previousSecrets);
  }

  sign(target: ConfirmationTarget): string {
    const issuedAt = Buffer.alloc(8);
    issuedAt.writeBigUInt64BE(BigInt(target.issuedAt.getTime()));
    return this.tokens.seal(
      Buffer.concat([
        Buffer.from(parseUuid(target.projectId)),
        Buffer.from(parseUuid(target.contactId)),
        issuedAt,
      ]),
    );
  }

  /** The target of a genuine token not older than 30 days at `now`, or null. */
  verify(token: string, now = new Date()): ConfirmationTarget | null {
    const body = this.tokens.open(token, BODY_BYTES, BODY_BYTES);
    if (!body) return null;
    const issuedAt = new Date(Number(body.readBigUInt64BE(32)));
    const age = now.getTime() - issuedAt.getTime();
    if (age > CONFIRMATION_TTL_MS || age < -60_000) return null;
    return {
      projectId: stringifyUuid(body.subarray(0, 16)),
      contactId: stringifyUuid(body.subarray(16, 32)),
      issuedAt,
    };
  }
}
