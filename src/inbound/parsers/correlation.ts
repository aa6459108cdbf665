import { addressIn, type FieldBlock } from './fields';

/** Our return paths: `b-<hex token>@<domain>` (sending/return-path.ts); the worker verifies each. */
const RETURN_PATH_TOKEN = /(?<![\w.+-])b-[0-9a-f]{16,60}@[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?/gi;
const INLINE_RETURN_PATH = /^Return-Path:[ \t]*(.+)$/gim;
const INLINE_MESSAGE_ID = /^Message-ID:[ \t]*(?:\r?\n[ \t]+)?(\S.*)$/gim;

/** What identifies the returned message, collected from every place a report may quote it. */
export class Correlation {
  readonly returnPaths = new Set<string>();
  readonly messageIds = new Set<string>();

  /** The headers of a returned message (`message/rfc822`, `text/rfc822-headers`, …). */
  addHeaders(headers: FieldBlock): void {
    for (const value of headers.get('return-path') ?? []) this.addReturnPath(value);
    for (const value of headers.get('message-id') ?? []) this.addMessageId(value);
  }

  /** A returned message quoted inline after a text bounce's report. */
  addInlineCopy(text: string): void {
    for (const match of text.matchAll(INLINE_RETURN_PATH)) this.addReturnPath(match[1]);
    for (const match of text.matchAll(INLINE_MESSAGE_ID)) this.addMessageId(match[1]);
  }

  /** Any `b-<token>@…` address in the text (Received `envelope-from`, `X-Postfix-Sender`, a report's wording). */
  scanTokens(text: string): void {
    for (const match of text.matchAll(RETURN_PATH_TOKEN))
      this.returnPaths.add(match[0].toLowerCase());
  }

  addReturnPath(value: string | null): void {
    const address = addressIn(value);
    if (address !== null) this.returnPaths.add(address);
  }

  addMessageId(value: string | null): void {
    const id = value?.match(/<([^<>\s]+)>/)?.[1] ?? value?.trim().split(/\s/)[0];
    if (id) this.messageIds.add(id);
  }
}
