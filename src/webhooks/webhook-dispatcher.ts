import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { AfterCommitDispatcher } from '../events/after-commit-dispatcher';
import { EventHooks, RecordedEvent } from '../events/event-hooks';
import { WEBHOOK_JOBS, WebhookJobData, webhookWakeDedupId, webhookJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { eventMatches, isDeliverable } from './webhook-events';
import { EndpointFilter, PendingDelivery, WebhooksRepository } from './webhooks.repository';

/** How long a project's endpoint filters are trusted in this process (changes made here apply at once). */
const FILTERS_TTL_MS = 5_000;
/** "No endpoint" is trusted for less: an endpoint created in another process is missed by the fast path (left to the sweep) for at most a second. */
const NO_ENDPOINTS_TTL_MS = 1_000;

/**
 * Wakes the endpoints' drains right after the events that made deliveries
 * commit (AfterCommitDispatcher: cached interests, a window). The rows
 * themselves were written by the outbox trigger in the event's transaction,
 * so this is only the fast path: whatever it misses (a process dying after
 * commit, a stale filter cache) the dispatch sweep finds. For events no
 * endpoint of the project listens to (the common case on the hot paths:
 * tracks, delivery status changes) it costs a map lookup.
 */
@Injectable()
export class WebhookDispatcher extends AfterCommitDispatcher<EndpointFilter[]> {
  protected readonly logger = new Logger(WebhookDispatcher.name);
  protected readonly failureMessage =
    'could not wake the webhook endpoints; the dispatch sweep will';
  /** A project's interest is its enabled endpoints' filters; none without endpoints. */
  protected readonly noInterest: EndpointFilter[] = [];

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.WEBHOOKS) private readonly queue: Queue<WebhookJobData>,
    private readonly repository: WebhooksRepository,
    hooks: EventHooks,
  ) {
    super(hooks);
  }

  protected candidate(event: RecordedEvent): boolean {
    return isDeliverable(event.name);
  }

  protected async loadInterests(projectIds: string[]): Promise<Map<string, EndpointFilter[]>> {
    const out = new Map<string, EndpointFilter[]>();
    for (const row of await this.repository.filtersOf(this.dataSource.manager, projectIds)) {
      const endpoints = out.get(row.projectId) ?? [];
      endpoints.push({ id: row.endpointId, events: row.events });
      out.set(row.projectId, endpoints);
    }
    return out;
  }

  protected ttlMs(endpoints: EndpointFilter[]): number {
    return endpoints.length > 0 ? FILTERS_TTL_MS : NO_ENDPOINTS_TTL_MS;
  }

  protected matches(event: RecordedEvent, endpoints: EndpointFilter[]): boolean {
    return endpoints.some((endpoint) => eventMatches(endpoint.events, event.name));
  }

  /** The filters say which endpoints have deliveries: no statement is needed. */
  protected async dispatch(
    events: RecordedEvent[],
    interests: Map<string, EndpointFilter[]>,
  ): Promise<void> {
    const endpointIds = new Set<string>();
    for (const event of events) {
      for (const endpoint of interests.get(event.projectId) ?? []) {
        if (eventMatches(endpoint.events, event.name)) endpointIds.add(endpoint.id);
      }
    }
    await this.wake([...endpointIds]);
  }

  /**
   * Wakes these endpoints' drains for deliveries due now (webhookWakeDedupId:
   * one job per endpoint per second, and one more after it when woken while it
   * runs). The after-commit path: the outbox trigger wrote the rows, and the
   * filters say which endpoints have some, so no statement is needed; a stale
   * filter wakes a drain that finds nothing, or misses an endpoint the sweep
   * then wakes.
   */
  async wake(endpointIds: string[]): Promise<void> {
    if (endpointIds.length === 0) return;
    const now = Date.now();
    await this.queue.addBulk(endpointIds.map((endpointId) => deliverJob(endpointId, null, 0, now)));
  }

  /**
   * Wakes the endpoint's drain in `delayMs` (a drain that found every slot of
   * it taken): one job per endpoint and second, whichever worker parks it.
   */
  async wakeLater(endpointId: string, delayMs: number): Promise<void> {
    const at = Date.now() + delayMs;
    const job = deliverJob(endpointId, null, delayMs, at);
    await this.queue.add(job.name, job.data, job.opts);
  }

  /**
   * Wakes the drains of these deliveries' endpoints: one job per endpoint for
   * the deliveries due now (webhookWakeDedupId), one delayed job per later
   * attempt (the id of that attempt). An existing job id is left alone.
   */
  async enqueue(deliveries: PendingDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    const now = Date.now();
    const dueNow = new Set<string>();
    const jobs: ReturnType<typeof deliverJob>[] = [];
    for (const d of deliveries) {
      const delay = (d.nextAttemptAt?.getTime() ?? now) - now;
      if (delay > 0) jobs.push(deliverJob(d.endpointId, d, delay, now));
      else dueNow.add(d.endpointId);
    }
    await this.queue.addBulk([
      ...[...dueNow].map((endpointId) => deliverJob(endpointId, null, 0, now)),
      ...jobs,
    ]);
  }
}

/** A DELIVER job: for the endpoint's deliveries due now (`later` null), or for one later attempt, delayed. */
function deliverJob(endpointId: string, later: PendingDelivery | null, delay: number, now: number) {
  return {
    name: WEBHOOK_JOBS.DELIVER,
    data: later ? { deliveryId: later.id, endpointId } : { endpointId },
    opts: {
      // A wake-up is deduplicated rather than given a job id: a job id already active would drop it.
      ...(later
        ? { jobId: webhookJobId(later) }
        : {
            deduplication: { id: webhookWakeDedupId(endpointId, now), keepLastIfActive: true },
          }),
      delay,
      // Nothing kept: a job that failed (the database was down) must not block the sweep from adding it again.
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 1,
    },
  };
}
