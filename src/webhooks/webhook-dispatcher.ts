import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { EventHooks, EventRecordedListener, RecordedEvent } from '../events/event-hooks';
import { WEBHOOK_JOBS, WebhookJobData, webhookDueJobId, webhookJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { eventMatches, isDeliverable } from './webhook-events';
import { EndpointFilter, PendingDelivery, WebhooksRepository } from './webhooks.repository';

/** How long a project's endpoint filters are trusted in this process (changes made here apply at once). */
const FILTERS_TTL_MS = 5_000;
/** "No endpoint" is trusted for less: an endpoint created in another process is missed by the fast path (left to the sweep) for at most a second. */
const NO_ENDPOINTS_TTL_MS = 1_000;
/** Events published within this window share one lookup of their deliveries. */
const BATCH_WINDOW_MS = 5;

/**
 * Wakes the endpoints' drains right after the events that made deliveries
 * commit. The rows themselves were written by the outbox trigger in the
 * event's transaction, so this is only the fast path: whatever it misses (a
 * process dying after commit, a stale filter cache) the dispatch sweep finds.
 * For events no endpoint of the project listens to (the common case on the
 * hot paths: tracks, delivery status changes) it costs a map lookup.
 */
@Injectable()
export class WebhookDispatcher implements EventRecordedListener, OnModuleInit {
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly filters = new Map<string, { endpoints: EndpointFilter[]; at: number }>();
  /** Endpoints to wake at the end of the current batch window. */
  private pendingEndpoints = new Set<string>();
  private flushing: Promise<void> | null = null;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.WEBHOOKS) private readonly queue: Queue<WebhookJobData>,
    private readonly repository: WebhooksRepository,
    private readonly hooks: EventHooks,
  ) {}

  onModuleInit(): void {
    this.hooks.register(this);
  }

  /** A project's endpoints changed in this process. */
  invalidate(projectId: string): void {
    this.filters.delete(projectId);
  }

  async onEventsRecorded(events: RecordedEvent[]): Promise<void> {
    const deliverable = events.filter((e) => isDeliverable(e.name));
    if (deliverable.length === 0) return;
    const projects = await this.filtersOf([...new Set(deliverable.map((e) => e.projectId))]);
    let matched = false;
    for (const e of deliverable) {
      for (const endpoint of projects.get(e.projectId) ?? []) {
        if (eventMatches(endpoint.events, e.name)) {
          this.pendingEndpoints.add(endpoint.id);
          matched = true;
        }
      }
    }
    if (!matched) return;
    this.flushing ??= new Promise<void>((resolve) => setTimeout(resolve, BATCH_WINDOW_MS)).then(
      () => this.flush(),
    );
    await this.flushing;
  }

  private async flush(): Promise<void> {
    const endpointIds = [...this.pendingEndpoints];
    this.pendingEndpoints = new Set();
    this.flushing = null;
    try {
      await this.wake(endpointIds);
    } catch (error) {
      this.logger.warn(
        { err: error, endpoints: endpointIds.length },
        'could not wake the webhook endpoints; the dispatch sweep will',
      );
    }
  }

  /**
   * Wakes these endpoints' drains for deliveries due now (webhookDueJobId: one
   * job per endpoint per second). The after-commit path: the outbox trigger
   * wrote the rows, and the filters say which endpoints have some, so no
   * statement is needed; a stale filter wakes a drain that finds nothing, or
   * misses an endpoint the sweep then wakes.
   */
  async wake(endpointIds: string[]): Promise<void> {
    if (endpointIds.length === 0) return;
    const now = Date.now();
    await this.queue.addBulk(endpointIds.map((endpointId) => deliverJob(endpointId, null, 0, now)));
  }

  /**
   * Wakes the drains of these deliveries' endpoints: one job per endpoint for
   * the deliveries due now (webhookDueJobId), one delayed job per later
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

  private async filtersOf(projectIds: string[]): Promise<Map<string, EndpointFilter[]>> {
    const now = Date.now();
    const out = new Map<string, EndpointFilter[]>();
    const missing: string[] = [];
    for (const id of projectIds) {
      const cached = this.filters.get(id);
      if (
        cached &&
        now - cached.at < (cached.endpoints.length > 0 ? FILTERS_TTL_MS : NO_ENDPOINTS_TTL_MS)
      )
        out.set(id, cached.endpoints);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const rows = await this.repository.filtersOf(this.dataSource.manager, missing);
      for (const id of missing) {
        const endpoints = rows
          .filter((r) => r.projectId === id)
          .map((r) => ({ id: r.endpointId, events: r.events }));
        this.filters.set(id, { endpoints, at: now });
        out.set(id, endpoints);
      }
    }
    return out;
  }
}

/** A DELIVER job: for the endpoint's deliveries due now (`later` null), or for one later attempt, delayed. */
function deliverJob(endpointId: string, later: PendingDelivery | null, delay: number, now: number) {
  return {
    name: WEBHOOK_JOBS.DELIVER,
    data: later ? { deliveryId: later.id, endpointId } : { endpointId },
    opts: {
      jobId: later ? webhookJobId(later) : webhookDueJobId(endpointId, now),
      delay,
      // Nothing kept: a job that failed (the database was down) must not block the sweep from adding it again.
      removeOnComplete: true,
      removeOnFail: true,
      attempts: 1,
    },
  };
}
