import type { DefaultJobOptions } from 'bullmq';

/** Every queue of the system. Processors and producers import names from here only. */
export const QUEUES = {
  /** One job per email record (job id = email id). */
  DELIVERY: 'delivery',
  /** Campaign fan-out and scheduled sends (job id = campaign id). */
  CAMPAIGNS: 'campaigns',
  /** Contact imports (job id = import id). */
  IMPORTS: 'imports',
  /** Workflow steps, delays and waits (job id workflowStepJobId(execution)). */
  WORKFLOWS: 'workflows',
  /** Live segment membership: re-evaluation of changed contacts, the periodic sweep. */
  SEGMENTS: 'segments',
  /** Domain DNS verification checks. */
  DOMAINS: 'domains',
  /** Outbound webhook deliveries (deduplicated by webhookWakeDedupId, job ids webhookJobId) and their dispatch sweep. */
  WEBHOOKS: 'webhooks',
  /** Open/click hits the API could not write to the database at once (engagement/email-tracking.service.ts). */
  TRACKING_HITS: 'tracking-hits',
  /** Inbound messages (bounces, complaints) the SMTP listener stored: parse, correlate, apply (job id inboundJobId(id)). */
  INBOUND: 'inbound',
  /** Monthly partitions of emails and events: created ahead, dropped past the retention (one scheduled job). */
  PARTITIONS: 'partitions',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Lower number runs first (BullMQ priorities). */
export const PRIORITY = {
  TRANSACTIONAL: 1,
  WORKFLOW: 5,
  CAMPAIGN: 10,
} as const;

/** Defaults for every job: bounded retries with exponential backoff, bounded history in Redis. */
export const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 50_000 },
};
