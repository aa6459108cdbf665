/**
 * Prefixes of the system's own event names; POST /v1/track refuses them (422
 * reserved_event). The contract names `email.`, `contact.` and `segment.`; the
 * system also records `campaign.*`, `domain.*`, `workflow.execution.failed`
 * and `webhook.disabled`, which outbound webhooks deliver and workflows
 * trigger on as the system's word, so a client may not forge them either.
 */
export const RESERVED_EVENT_PREFIXES = [
  'email.',
  'contact.',
  'segment.',
  'campaign.',
  'domain.',
  'workflow.',
  'webhook.',
  'project.',
] as const;

export function isReservedEventName(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_EVENT_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** Events the system records itself (EventsService.record). */
export const SYSTEM_EVENTS = {
  EMAIL_QUEUED: 'email.queued',
  EMAIL_SENT: 'email.sent',
  EMAIL_FAILED: 'email.failed',
  EMAIL_BOUNCED: 'email.bounced',
  EMAIL_COMPLAINED: 'email.complained',
  EMAIL_DELAYED: 'email.delayed',
  EMAIL_OPENED: 'email.opened',
  EMAIL_CLICKED: 'email.clicked',
  CONTACT_SUBSCRIBED: 'contact.subscribed',
  CONTACT_UNSUBSCRIBED: 'contact.unsubscribed',
  CONTACT_CONFIRMED: 'contact.confirmed',
  PROJECT_HEALTH_WARNING: 'project.health_warning',
  PROJECT_SENDING_PAUSED: 'project.sending_paused',
  PROJECT_SENDING_RESUMED: 'project.sending_resumed',
} as const;

export const MAX_EVENT_NAME_LENGTH = 100;
