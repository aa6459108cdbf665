import type { BounceKind } from '../bounces/bounce-report';

/** One recipient block of a report, classified by the contract's rules. */
export interface ParsedRecipient {
  /** `ignored`: delivered, relayed, expanded, or nothing a policy acts on. */
  kind: BounceKind | 'ignored';
  recipient: string | null;
  status: string | null;
  diagnostic: string | null;
}

/**
 * What the parsers (inbound/parsers) make of one raw inbound message, before it
 * is correlated with an email: the listener's worker then finds the email by
 * the envelope recipient's return-path token, else by `returnPaths` or
 * `messageIds` from the returned headers.
 */
export interface ParsedInbound {
  format: 'dsn' | 'arf' | 'text-bounce' | 'auto-reply' | 'unknown';
  /** DSN and text bounces: one per recipient block; ARF: one complaint; auto-reply and unknown: none. */
  recipients: ParsedRecipient[];
  /** ARF `Feedback-Type`, lower-cased. */
  feedbackType: string | null;
  /** Return-path addresses found in the returned message or report (`Return-Path`, `b-<token>@` addresses, …). */
  returnPaths: string[];
  /** `Message-ID`s of the returned message, without angle brackets. */
  messageIds: string[];
  /** The DSN's `Original-Envelope-Id` (our ENVID), when present. */
  envelopeId: string | null;
}
