import type { BounceKind } from '../bounces/bounce-report';

/**
 * One recipient's bounce, complaint or delay as a provider reported it,
 * before it is correlated to an email: what each provider's payload is
 * parsed to (contract: "Provider webhooks").
 */
export interface ProviderEvent {
  kind: BounceKind;
  /** The provider's id of the event (or of its message), for the report's dedupe key. */
  eventId: string;
  recipient: string | null;
  status: string | null;
  diagnostic: string | null;
  feedbackType: string | null;
  /** Message-ID header values of the original message that the payload carries (ours name the email). */
  messageIds: string[];
  /** The original envelope sender, when the payload carries it (our return path names the email). */
  returnPath: string | null;
  /** When it happened, to pick the email sent before it when only the recipient is known. */
  occurredAt: Date | null;
}

type Json = Record<string, unknown>;

function object(value: unknown): Json {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function text(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

function array(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function date(value: unknown): Date | null {
  const parsed =
    typeof value === 'number'
      ? new Date(value * 1000)
      : typeof value === 'string'
        ? new Date(value)
        : null;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : null;
}

/** Diagnostics are stored as text; a provider's may be long (whole bounce bodies). */
function diagnostic(...candidates: unknown[]): string | null {
  for (const candidate of candidates) {
    const value = text(candidate);
    if (value) return value.slice(0, 2000);
  }
  return null;
}

/** The Message-ID values among `{name, value}` header lists (SES, Resend). */
function messageIdsOf(headers: unknown): string[] {
  return array(headers)
    .map(object)
    .filter((h) => typeof h.name === 'string' && h.name.toLowerCase() === 'message-id')
    .map((h) => text(h.value))
    .filter((v): v is string => v !== null);
}

/**
 * An SES event (the SNS Message, parsed): notifications (`notificationType`)
 * and event publishing (`eventType`) alike. Bounce Permanent → hard,
 * Transient and Undetermined → soft; Complaint → complaint; DeliveryDelay →
 * delayed; anything else (Delivery, Send, Open…) → nothing.
 */
export function sesEvents(message: Json, snsMessageId: string): ProviderEvent[] {
  const type = text(message.notificationType) ?? text(message.eventType);
  const mail = object(message.mail);
  const common = object(mail.commonHeaders);
  const base = {
    messageIds: [
      ...messageIdsOf(mail.headers),
      ...(text(common.messageId) ? [text(common.messageId)!] : []),
    ],
    returnPath: text(mail.source),
  };
  if (type === 'Bounce') {
    const bounce = object(message.bounce);
    const kind: BounceKind = text(bounce.bounceType) === 'Permanent' ? 'hard' : 'soft';
    return array(bounce.bouncedRecipients).map((entry) => {
      const recipient = object(entry);
      return {
        ...base,
        kind,
        eventId: text(bounce.feedbackId) ?? snsMessageId,
        recipient: text(recipient.emailAddress),
        status: text(recipient.status),
        diagnostic: diagnostic(recipient.diagnosticCode, bounce.bounceSubType),
        feedbackType: null,
        occurredAt: date(bounce.timestamp),
      };
    });
  }
  if (type === 'Complaint') {
    const complaint = object(message.complaint);
    return array(complaint.complainedRecipients).map((entry) => ({
      ...base,
      kind: 'complaint' as const,
      eventId: text(complaint.feedbackId) ?? snsMessageId,
      recipient: text(object(entry).emailAddress),
      status: null,
      diagnostic: null,
      feedbackType: text(complaint.complaintFeedbackType) ?? 'abuse',
      occurredAt: date(complaint.timestamp),
    }));
  }
  if (type === 'DeliveryDelay') {
    const delay = object(message.deliveryDelay);
    return array(delay.delayedRecipients).map((entry) => {
      const recipient = object(entry);
      return {
        ...base,
        kind: 'delayed' as const,
        eventId: snsMessageId,
        recipient: text(recipient.emailAddress),
        status: text(recipient.status),
        diagnostic: diagnostic(recipient.diagnosticCode, delay.delayType),
        feedbackType: null,
        occurredAt: date(delay.timestamp),
      };
    });
  }
  return [];
}

const POSTMARK_KINDS: Record<string, BounceKind> = {
  HardBounce: 'hard',
  BadEmailAddress: 'hard',
  ManuallyDeactivated: 'hard',
  SoftBounce: 'soft',
  DnsError: 'soft',
  Blocked: 'soft',
  DMARCPolicy: 'soft',
  SpamNotification: 'soft',
  VirusNotification: 'soft',
  Transient: 'delayed',
  SpamComplaint: 'complaint',
};

/**
 * A Postmark bounce or spam-complaint webhook: HardBounce, BadEmailAddress,
 * ManuallyDeactivated → hard; SoftBounce, DnsError, Blocked, DMARCPolicy,
 * SpamNotification, VirusNotification → soft; Transient (delayed) → delayed;
 * SpamComplaint → complaint; auto-responders, subscribe requests, unknown → nothing.
 */
export function postmarkEvents(body: Json): ProviderEvent[] {
  const recordType = text(body.RecordType);
  if (recordType !== 'Bounce' && recordType !== 'SpamComplaint') return [];
  const kind = recordType === 'SpamComplaint' ? 'complaint' : POSTMARK_KINDS[text(body.Type) ?? ''];
  const id = text(body.ID) ?? text(body.MessageID);
  if (!kind || !id) return [];
  return [
    {
      kind,
      eventId: id,
      recipient: text(body.Email),
      status: null,
      diagnostic: diagnostic(body.Details, body.Description),
      feedbackType: kind === 'complaint' ? 'abuse' : null,
      messageIds: [],
      returnPath: null,
      occurredAt: date(body.BouncedAt),
    },
  ];
}

/**
 * A Mailgun webhook's `event-data`: `failed` with severity permanent → hard,
 * temporary → soft; `complained` → complaint; anything else → nothing.
 */
export function mailgunEvents(eventData: Json): ProviderEvent[] {
  const event = text(eventData.event);
  const kind: BounceKind | null =
    event === 'complained'
      ? 'complaint'
      : event === 'failed'
        ? text(eventData.severity) === 'permanent'
          ? 'hard'
          : 'soft'
        : null;
  const id = text(eventData.id);
  if (!kind || !id) return [];
  const status = object(eventData['delivery-status']);
  const headers = object(object(eventData.message).headers);
  const messageId = text(headers['message-id']);
  return [
    {
      kind,
      eventId: id,
      recipient: text(eventData.recipient),
      status: text(status['enhanced-code']) ?? text(status.code),
      diagnostic: diagnostic(status.message, status.description, eventData.reason),
      feedbackType: kind === 'complaint' ? 'abuse' : null,
      messageIds: messageId ? [messageId] : [],
      returnPath: text(object(eventData.envelope).sender),
      occurredAt: date(eventData.timestamp),
    },
  ];
}

/** SendGrid `dropped` reasons that say something about the address. */
function droppedKind(reason: string | null): BounceKind {
  if (reason === 'Spam Reporting Address') return 'complaint';
  if (reason === 'Bounced Address' || reason === 'Invalid') return 'hard';
  return 'soft';
}

/**
 * SendGrid event webhook (an array of events): `bounce` of type bounce →
 * hard, of type blocked → soft; `dropped` for a bounced or invalid address →
 * hard, for a spam-reporting address → complaint, else soft; `spamreport` →
 * complaint; `deferred` → delayed; anything else → nothing.
 */
export function sendgridEvents(events: unknown[]): ProviderEvent[] {
  const out: ProviderEvent[] = [];
  for (const entry of events) {
    const event = object(entry);
    const name = text(event.event);
    const kind: BounceKind | null =
      name === 'bounce'
        ? text(event.type) === 'blocked'
          ? 'soft'
          : 'hard'
        : name === 'dropped'
          ? droppedKind(text(event.reason))
          : name === 'spamreport'
            ? 'complaint'
            : name === 'deferred'
              ? 'delayed'
              : null;
    const id = text(event.sg_event_id) ?? text(event.sg_message_id);
    if (!kind || !id) continue;
    const smtpId = text(event['smtp-id']);
    out.push({
      kind,
      eventId: id,
      recipient: text(event.email),
      status: text(event.status),
      diagnostic: diagnostic(event.reason, event.response),
      feedbackType: kind === 'complaint' ? 'abuse' : null,
      messageIds: smtpId ? [smtpId] : [],
      returnPath: null,
      occurredAt: date(event.timestamp),
    });
  }
  return out;
}

/**
 * A Resend webhook: `email.bounced` (bounce.type Transient → soft, else
 * hard), `email.complained` → complaint, `email.delivery_delayed` → delayed;
 * anything else → nothing. One event per recipient in `data.to`.
 */
export function resendEvents(body: Json, webhookId: string): ProviderEvent[] {
  const type = text(body.type);
  const data = object(body.data);
  const bounce = object(data.bounce);
  const kind: BounceKind | null =
    type === 'email.bounced'
      ? text(bounce.type) === 'Transient'
        ? 'soft'
        : 'hard'
      : type === 'email.complained'
        ? 'complaint'
        : type === 'email.delivery_delayed'
          ? 'delayed'
          : null;
  if (!kind) return [];
  const recipients = Array.isArray(data.to) ? data.to : [data.to];
  return recipients
    .map(text)
    .filter((to): to is string => to !== null)
    .map((recipient) => ({
      kind,
      eventId: webhookId,
      recipient,
      status: null,
      diagnostic: diagnostic(bounce.message, bounce.subType),
      feedbackType: kind === 'complaint' ? 'abuse' : null,
      messageIds: messageIdsOf(data.headers),
      returnPath: null,
      occurredAt: date(data.created_at) ?? date(body.created_at),
    }));
}
