import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';
import { SignedTokens } from '../common/crypto/signed-tokens';

/** What an unsubscribe link identifies. `emailId` is the message it came in, when there is one. */
export interface UnsubscribeTarget {
  projectId: string;
  contactId: string;
  emailId: string | null;
}

const NIL = '00000000-0000-0000-0000-000000000000';
const BODY_BYTES = 48;

/** Unsubscribe tokens (common/crypto/signed-tokens.ts): the three raw UUIDs of the target. */
export class UnsubscribeTokens {
  private readonly tokens: SignedTokens;

  constructor(appSecret: string, previousSecrets: readonly string[] = []) {
    this.tokens = new SignedTokens('unsubscribe', appSecret, previousSecrets);
  }

  sign(target: UnsubscribeTarget): string {
    return this.tokens.seal(
      Buffer.concat([
        Buffer.from(parseUuid(target.projectId)),
        Buffer.from(parseUuid(target.contactId)),
        Buffer.from(parseUuid(target.emailId ?? NIL)),
      ]),
    );
  }

  /** The target of a genuine token, or null for anything forged, altered or malformed. */
  verify(token: string): UnsubscribeTarget | null {
    const body = this.tokens.open(token, BODY_BYTES, BODY_BYTES);
    if (!body) return null;
    const emailId = stringifyUuid(body.subarray(32, 48));
    return {
      projectId: stringifyUuid(body.subarray(0, 16)),
      contactId: stringifyUuid(body.subarray(16, 32)),
      emailId: emailId === NIL ? null : emailId,
    };
  }
}
