import { createHash } from 'node:crypto';
import { isUuid } from '../database/id';
import type { BounceReport } from '../bounces/bounce-report';
import type { ReturnPathTokens } from '../sending/return-path';
import type { ParsedInbound } from './parsed-inbound';

export type MatchedBy = 'envelope' | 'return-path' | 'message-id' | 'envelope-id';

/** An email a message may be about, with what named it; `messageId` must match when set. */
export interface EmailCandidate {
  emailId: string;
  matchedBy: MatchedBy;
  messageId?: string;
}

/**
 * The emails a message may report on, most trusted first (contract: the
 * return-path token, else the token or Message-ID in the returned headers):
 * the envelope recipient's token, the return paths and the envelope id the
 * report quotes, then our Message-IDs (`<emailId@domain>`, so the id is read
 * from it and the stored Message-ID must match). The caller keeps the first
 * that exists.
 */
export function emailCandidates(
  rcptTo: readonly string[],
  parsed: ParsedInbound,
  tokens: ReturnPathTokens,
): EmailCandidate[] {
  const candidates: EmailCandidate[] = [];
  const add = (emailId: string | null, matchedBy: MatchedBy, messageId?: string) => {
    if (emailId) candidates.push({ emailId, matchedBy, ...(messageId ? { messageId } : {}) });
  };
  for (const rcpt of rcptTo) add(tokens.verifyAddress(rcpt), 'envelope');
  for (const returnPath of parsed.returnPaths) add(tokens.verifyAddress(returnPath), 'return-path');
  if (parsed.envelopeId) {
    const envid = parsed.envelopeId.trim();
    add(isUuid(envid) ? envid.toLowerCase() : tokens.verifyAddress(envid), 'envelope-id');
  }
  for (const messageId of parsed.messageIds) {
    const local = messageId.slice(0, messageId.lastIndexOf('@'));
    if (isUuid(local)) add(local.toLowerCase(), 'message-id', `<${messageId}>`);
  }
  return candidates;
}

/** The first candidate that names an existing email (and its Message-ID, where it came from one). */
export function pickEmail(
  candidates: readonly EmailCandidate[],
  existing: ReadonlyMap<string, string | null>,
): EmailCandidate | null {
  for (const candidate of candidates) {
    if (!existing.has(candidate.emailId)) continue;
    if (candidate.messageId === undefined) return candidate;
    const stored = existing.get(candidate.emailId);
    if (stored && stored.toLowerCase() === candidate.messageId.toLowerCase()) return candidate;
  }
  return null;
}

/** Postgres refuses NUL in text and jsonb: a report carrying one would fail every attempt. */
function clean(text: string | null): string | null {
  return text === null ? null : text.replaceAll('\u0000', '');
}

/**
 * One report per recipient block the policy acts on. The dedupe key is the
 * message's content hash and the block's position: the same message stored
 * twice (a sender that missed our 250 and sent it again) or processed twice
 * (a retried job) yields the same keys, so the policy applies it once.
 */
export function reportsOf(
  raw: Buffer,
  parsed: ParsedInbound,
  emailId: string | null,
): BounceReport[] {
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 32);
  const source = parsed.format === 'arf' ? 'arf' : 'dsn';
  const reports: BounceReport[] = [];
  parsed.recipients.forEach((recipient, index) => {
    if (recipient.kind === 'ignored') return;
    reports.push({
      kind: recipient.kind,
      source,
      emailId,
      recipient: clean(recipient.recipient),
      status: clean(recipient.status),
      diagnostic: clean(recipient.diagnostic),
      feedbackType: recipient.kind === 'complaint' ? clean(parsed.feedbackType) : null,
      dedupeKey: `inbound-${hash}-${index}`,
      projectId: null,
    });
  });
  return reports;
}
