/**
 * What every source of bounce and complaint news is normalised to before the
 * one policy applies it (contract: "Bounces and complaints"): the inbound
 * listener's DSN/ARF/text parsers, provider webhooks, POST /bounces and the
 * synchronous 5xx during delivery.
 */
export type BounceKind = 'hard' | 'soft' | 'complaint' | 'delayed';

export type BounceSource =
  'smtp' | 'dsn' | 'arf' | 'ses' | 'postmark' | 'mailgun' | 'sendgrid' | 'resend' | 'api';

export interface BounceReport {
  kind: BounceKind;
  source: BounceSource;
  /** The email it is about, once correlated (return-path token, returned headers, provider id); null: unmatched. */
  emailId: string | null;
  /** The recipient address the report names, when it names one. */
  recipient: string | null;
  /** Enhanced status code (`5.1.1`), else the SMTP reply code, when known. */
  status: string | null;
  /** The remote server's diagnostic text, trimmed, when known. */
  diagnostic: string | null;
  /** ARF `Feedback-Type` (`abuse`, `fraud`, …) for complaints. */
  feedbackType: string | null;
  /**
   * Identifies the report for idempotency: the same report received twice has
   * the same key (e.g. the inbound message's hash + recipient block, or the
   * provider's event id), so applying it again changes nothing.
   */
  dedupeKey: string;
  /**
   * When the report comes through a channel bound to one project (a provider
   * webhook URL, an sk_ key), it applies only to that project's emails.
   */
  projectId: string | null;
}
