import type { Job } from 'bullmq';
import { QUEUES, QueueName } from './queue.constants';

/*
 * The jobs of every queue: their names and payloads, next to the queue names.
 * Producers and processors import them from here only. Payloads carry ids
 * only; the processor reloads the row and follows its status. Job ids are the
 * bare row id or `<kind>-<id>`: BullMQ refuses custom ids containing ':'.
 */

/** Payload of a recovery job: none, the handler looks for the rows itself. */
export type RecoveryJobData = Record<string, never>;

/** QUEUES.DELIVERY: one DELIVER job per email, job id = email id. */
export const DELIVERY_JOBS = {
  DELIVER: 'deliver',
  /** Re-adds the jobs of open emails that have none (see RECOVERY_SCHEDULERS). */
  RECOVER: 'recover-deliveries',
} as const;

export interface DeliveryJobData {
  emailId: string;
  /**
   * The provider group's slot this job was handed back to wait for (delivery
   * pacing), with the job's attemptsMade then: honoured once it runs again
   * in the same attempt. Not an id, but the one thing a paced job must carry
   * so that it is not rescheduled behind every job that came after it.
   */
  pace?: { slot: number; at: number; attempt: number };
}

export type DeliveryQueueJob =
  | Job<DeliveryJobData, unknown, typeof DELIVERY_JOBS.DELIVER>
  | Job<RecoveryJobData, unknown, typeof DELIVERY_JOBS.RECOVER>;

/** QUEUES.IMPORTS: one IMPORT job per contact import, job id = import id. */
export const IMPORT_JOBS = {
  IMPORT: 'import-contacts',
  /** Re-adds the jobs of unfinished imports (see RECOVERY_SCHEDULERS). */
  RECOVER: 'recover-imports',
} as const;

export interface ImportJobData {
  importId: string;
}

export type ImportQueueJob =
  | Job<ImportJobData, unknown, typeof IMPORT_JOBS.IMPORT>
  | Job<RecoveryJobData, unknown, typeof IMPORT_JOBS.RECOVER>;

/** QUEUES.DOMAINS. */
export const DOMAIN_JOBS = {
  /** Check one domain now (after creation); job id domainCheckJobId(domainId). */
  CHECK: 'check-domain',
  /** The repeating sweep over pending and due verified domains; it is this queue's recovery job too. */
  SWEEP: 'sweep-domains',
} as const;

export interface DomainCheckJobData {
  domainId: string;
}

export type DomainQueueJob =
  | Job<DomainCheckJobData, unknown, typeof DOMAIN_JOBS.CHECK>
  | Job<RecoveryJobData, unknown, typeof DOMAIN_JOBS.SWEEP>;

export function domainCheckJobId(domainId: string): string {
  return `check-${domainId}`;
}

/**
 * QUEUES.TRACKING_HITS: RECORD_HIT jobs, added only when the database was
 * unreachable as the API wrote a batch of open/click hits. The one exception
 * to "ids only": a hit is no row yet, so the job carries it (email id, kind,
 * count, first time, first URL); BullMQ's own id, retried with backoff. No
 * recovery scheduler: there is no row to find again.
 */
export const TRACKING_JOBS = {
  RECORD_HIT: 'record-hit',
} as const;

export interface RecordHitJobData {
  emailId: string;
  kind: 'open' | 'click';
  count: number;
  /** ISO time of the first hit counted. */
  at: string;
  url?: string;
}

export type TrackingQueueJob = Job<RecordHitJobData, unknown, typeof TRACKING_JOBS.RECORD_HIT>;

/**
 * QUEUES.CAMPAIGNS: one RUN job per campaign, job id campaignJobId(id),
 * delayed until `scheduledAt` for a SCHEDULED campaign. It starts the
 * campaign when due, fans out its email records, hands them to delivery as
 * delivery drains, and marks it SENT; a job that dies is run again and
 * resumes from the committed state.
 */
export const CAMPAIGN_JOBS = {
  RUN: 'run-campaign',
  /** Re-adds the jobs of SCHEDULED and SENDING campaigns (see RECOVERY_SCHEDULERS). */
  RECOVER: 'recover-campaigns',
} as const;

export interface CampaignJobData {
  campaignId: string;
}

export type CampaignQueueJob =
  | Job<CampaignJobData, unknown, typeof CAMPAIGN_JOBS.RUN>
  | Job<RecoveryJobData, unknown, typeof CAMPAIGN_JOBS.RECOVER>;

export function campaignJobId(campaignId: string): string {
  return `campaign-${campaignId}`;
}

/**
 * QUEUES.WEBHOOKS: a DELIVER job wakes its endpoint's drain in the worker that
 * takes it (the drain claims due deliveries of that endpoint in batches and
 * records them in batches; see WebhookSender): deduplicated by
 * webhookWakeDedupId for deliveries due now, and one delayed job per later
 * attempt (webhookJobId, deterministic from the row's state). DISPATCH is the sweep (the queue's recovery
 * job), the path that makes the outbox lossless.
 */
export const WEBHOOK_JOBS = {
  DELIVER: 'deliver-webhook',
  DISPATCH: 'dispatch-webhooks',
} as const;

export interface WebhookJobData {
  /** The delivery whose (later) attempt the job is for; absent on a wake-up for deliveries due now. */
  deliveryId?: string;
  /** Lets a worker see that the endpoint has enough in flight before it loads anything. */
  endpointId: string;
}

export type WebhookQueueJob =
  | Job<WebhookJobData, unknown, typeof WEBHOOK_JOBS.DELIVER>
  | Job<RecoveryJobData, unknown, typeof WEBHOOK_JOBS.DISPATCH>;

/** `webhook-<delivery>-<manual retries>-<attempts made>`: a later attempt's delayed job, a new id per attempt and per manual retry. */
export function webhookJobId(delivery: { id: string; retries: number; attempts: number }): string {
  return `webhook-${delivery.id}-${delivery.retries}-${delivery.attempts}`;
}

/**
 * `webhook-due-<endpoint>-<second>`: the deduplication id of the jobs that
 * wake an endpoint's drain, one per endpoint per second whichever process adds
 * it (a burst of events was one job per 5 ms dispatch batch, each costing the
 * worker a job's round trips only to join the running drain). A wake while
 * that job waits is dropped (it has yet to claim); one while it is active is
 * kept (BullMQ's keepLastIfActive) and runs once it ends: a delivery committed
 * after the running drain's last claim would otherwise wait for the sweep.
 */
export function webhookWakeDedupId(endpointId: string, now = Date.now()): string {
  return `webhook-due-${endpointId}-${Math.floor(now / 1000)}`;
}

/**
 * QUEUES.WORKFLOWS: one STEP job per move of an execution, job id
 * workflowStepJobId(execution): the execution's `version` changes at every
 * transition, so a repeated or stale job finds a different version and does
 * nothing. Delays and wait timeouts are the same job, delayed. RECOVER re-adds
 * the jobs of executions that are due and have none (the queue's recovery job).
 */
export const WORKFLOW_JOBS = {
  STEP: 'workflow-step',
  RECOVER: 'recover-workflows',
} as const;

export interface WorkflowStepJobData {
  executionId: string;
  version: number;
  /** The step it runs is known not to be a WEBHOOK: no look at the execution before its transaction. */
  direct?: true;
}

export type WorkflowQueueJob =
  | Job<WorkflowStepJobData, unknown, typeof WORKFLOW_JOBS.STEP>
  | Job<RecoveryJobData, unknown, typeof WORKFLOW_JOBS.RECOVER>;

export function workflowStepJobId(execution: { id: string; version: number }): string {
  return `wfx-${execution.id}-${execution.version}`;
}

/**
 * QUEUES.SEGMENTS: live segment membership. EVALUATE re-evaluates the contacts
 * marked dirty (job id SEGMENT_EVALUATE_JOB_ID while one waits); SWEEP is the
 * periodic job (the queue's recovery job): time-window rules, and dirty
 * contacts a lost EVALUATE left behind.
 */
export const SEGMENT_JOBS = {
  EVALUATE: 'evaluate-membership',
  SWEEP: 'membership-sweep',
} as const;

/** The one EVALUATE job's id while it waits (a burst of changes wakes one evaluation). */
export const SEGMENT_EVALUATE_JOB_ID = 'segments-evaluate';

export type SegmentQueueJob =
  | Job<RecoveryJobData, unknown, typeof SEGMENT_JOBS.EVALUATE>
  | Job<RecoveryJobData, unknown, typeof SEGMENT_JOBS.SWEEP>;

/**
 * QUEUES.INBOUND: one PROCESS job per group commit of the inbound listener
 * (the messages one statement stored; the recovery adds one per message),
 * job id inboundJobId(first id): parse each, find the email it reports on,
 * apply the reports. RECOVER re-adds the jobs of messages still RECEIVED and drops
 * finished messages past their retention (the queue's recovery job).
 */
export const INBOUND_JOBS = {
  PROCESS: 'process-inbound',
  RECOVER: 'recover-inbound',
} as const;

export interface InboundJobData {
  /** The first message (the only one in jobs of the recovery and of earlier versions). */
  inboundMessageId: string;
  /** Every message of the job, the first included, when there are several. */
  inboundMessageIds?: string[];
}

export type InboundQueueJob =
  | Job<InboundJobData, unknown, typeof INBOUND_JOBS.PROCESS>
  | Job<RecoveryJobData, unknown, typeof INBOUND_JOBS.RECOVER>;

export function inboundJobId(inboundMessageId: string): string {
  return `inbound-${inboundMessageId}`;
}

/**
 * QUEUES.PARTITIONS: MAINTAIN, the queue's scheduled job, creates the monthly
 * partitions of emails and events ahead of time and drops those past
 * EVENT_RETENTION_DAYS / EMAIL_RETENTION_DAYS.
 */
export const PARTITION_JOBS = {
  MAINTAIN: 'maintain-partitions',
} as const;

export type PartitionQueueJob = Job<RecoveryJobData, unknown, typeof PARTITION_JOBS.MAINTAIN>;

/**
 * One recovery scheduler per queue (see recovery.ts): its fixed id, the same
 * in every worker so upserting it leaves one scheduler per deployment (queue
 * prefix), and the job it produces on that queue. An id must never change
 * once deployed: Redis would keep the old scheduler running beside the new.
 */
export const RECOVERY_SCHEDULERS = {
  [QUEUES.DELIVERY]: { id: 'delivery-recovery', jobName: DELIVERY_JOBS.RECOVER },
  [QUEUES.IMPORTS]: { id: 'imports-recovery', jobName: IMPORT_JOBS.RECOVER },
  [QUEUES.DOMAINS]: { id: 'domains-sweep', jobName: DOMAIN_JOBS.SWEEP },
  [QUEUES.CAMPAIGNS]: { id: 'campaigns-recovery', jobName: CAMPAIGN_JOBS.RECOVER },
  [QUEUES.WEBHOOKS]: { id: 'webhooks-dispatch', jobName: WEBHOOK_JOBS.DISPATCH },
  [QUEUES.WORKFLOWS]: { id: 'workflows-recovery', jobName: WORKFLOW_JOBS.RECOVER },
  [QUEUES.SEGMENTS]: { id: 'segments-membership-sweep', jobName: SEGMENT_JOBS.SWEEP },
  [QUEUES.INBOUND]: { id: 'inbound-recovery', jobName: INBOUND_JOBS.RECOVER },
  [QUEUES.PARTITIONS]: { id: 'partitions-maintenance', jobName: PARTITION_JOBS.MAINTAIN },
} as const satisfies Partial<Record<QueueName, { id: string; jobName: string }>>;

export type RecoverableQueue = keyof typeof RECOVERY_SCHEDULERS;

/** Id of the domains queue's scheduler (the sweep). */
export const DOMAIN_SWEEP_SCHEDULER_ID = RECOVERY_SCHEDULERS[QUEUES.DOMAINS].id;
