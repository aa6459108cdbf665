/**
 * Which events leave the system and which endpoint filters take them. The
 * authoritative copy is SQL (webhook_deliverable / webhook_event_matches in
 * migration Webhooks, used by the outbox trigger); this one only lets the
 * after-commit dispatch skip a database query for events nobody listens to.
 * webhook-events.spec.ts checks both copies agree on the same cases.
 */
const DELIVERABLE_NAMES: ReadonlySet<string> = new Set([
  'campaign.started',
  'campaign.sent',
  'campaign.cancelled',
  'domain.verified',
  'domain.failed',
  'workflow.execution.failed',
  'webhook.disabled',
]);

export function isDeliverable(name: string): boolean {
  return (
    name.startsWith('email.') ||
    name.startsWith('contact.') ||
    name.startsWith('project.') ||
    DELIVERABLE_NAMES.has(name)
  );
}

export function eventMatches(patterns: readonly string[], name: string): boolean {
  return patterns.some(
    (p) => p === '*' || p === name || (p.endsWith('*') && name.startsWith(p.slice(0, -1))),
  );
}

/** An event filter: `*`, a name, or a prefix ending in `.*` (`email.*`). */
export const EVENT_PATTERN = /^(\*|[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*(\.\*)?)$/;
