import { getQueueToken } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { AppMetrics, METRICS_REGISTRY } from '../common/metrics/metrics';
import { AppConfig, runsApi } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { EventHooks, EventRecordedListener, RecordedEvent } from '../events/event-hooks';
import { QUEUES } from '../queue/queue.constants';
import { LabelledCount, OperationsRepository } from './operations.repository';
import { ReadDatabase } from '../database/read-database';

/** Counts that need the database are refreshed at most this often, whatever the scrape rate (one read of a few counter rows). */
export const DATABASE_COUNTS_TTL_MS = 1_000;
/** How often a process offers to fold the counter slots of gone backends (one process does it at a time). */
const COMPACTION_INTERVAL_MS = 60_000;
/** Queue counts (Redis) at most this often. */
const QUEUE_COUNTS_TTL_MS = 2_000;
const QUEUE_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed'] as const;

/**
 * The gauges of GET /metrics that are read rather than counted: queue jobs
 * per state (Redis), and emails by status and source, webhook deliveries,
 * campaigns and workflow executions by status (Postgres counter rows, see
 * StatusCounter; at most every second, the last answer served in between).
 * Also counts email.* events as they are published.
 *
 * Those gauges are global (every process would read the same numbers), so
 * only processes that serve the API export them, and a sum over the scraped
 * processes does not count the same jobs and emails twice per worker. A
 * worker-only process's /metrics has its own counters and process metrics.
 * With several API replicas, aggregate these gauges with max, not sum.
 */
@Injectable()
export class MetricsService implements OnModuleInit, OnModuleDestroy, EventRecordedListener {
  private readonly logger = new Logger(MetricsService.name);
  /** Null in a worker-only process: the global gauges are exported by API processes only. */
  private readonly global: {
    queueJobs: Gauge<'queue' | 'state'>;
    emails: Gauge<'status' | 'source'>;
    webhookDeliveries: Gauge<'status'>;
    campaigns: Gauge<'status'>;
    workflowExecutions: Gauge<'status'>;
  } | null;
  private compaction: NodeJS.Timeout | null = null;
  private databaseAt = 0;
  private queuesAt = 0;
  private refreshing: Promise<void> | null = null;

  constructor(
    @Inject(METRICS_REGISTRY) private readonly metrics: AppMetrics,
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: the status gauges (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly repository: OperationsRepository,
    private readonly moduleRef: ModuleRef,
    private readonly hooks: EventHooks,
  ) {
    const registers = [metrics.registry];
    this.global = runsApi(config)
      ? {
          queueJobs: new Gauge({
            name: 'mailwright_queue_jobs',
            help: 'Jobs per queue and state',
            labelNames: ['queue', 'state'],
            registers,
          }),
          emails: new Gauge({
            name: 'mailwright_emails',
            help: 'Email records by status and source',
            labelNames: ['status', 'source'],
            registers,
          }),
          webhookDeliveries: new Gauge({
            name: 'mailwright_webhook_deliveries',
            help: 'Outbound webhook deliveries by status',
            labelNames: ['status'],
            registers,
          }),
          campaigns: new Gauge({
            name: 'mailwright_campaigns',
            help: 'Campaigns by status',
            labelNames: ['status'],
            registers,
          }),
          workflowExecutions: new Gauge({
            name: 'mailwright_workflow_executions',
            help: 'Workflow executions by status',
            labelNames: ['status'],
            registers,
          }),
        }
      : null;
  }

  onModuleInit(): void {
    this.hooks.register(this);
    this.compaction = setInterval(() => void this.compact(), COMPACTION_INTERVAL_MS);
    this.compaction.unref();
  }

  onModuleDestroy(): void {
    if (this.compaction) clearInterval(this.compaction);
    this.compaction = null;
  }

  private async compact(): Promise<void> {
    try {
      await this.repository.compactCounters(this.dataSource.manager);
    } catch (error) {
      // Only the number of counter rows read grows until the next run; the counts stay exact.
      this.logger.warn({ err: error }, 'could not compact the status counters');
    }
  }

  onEventsRecorded(events: RecordedEvent[]): void {
    for (const event of events) {
      if (!event.name.startsWith('email.')) continue;
      this.metrics.emailEvents.inc({ event: event.name });
      if (event.name === 'email.bounced') this.metrics.smtpErrors.inc({ class: 'permanent' });
      if (event.name === 'email.failed') this.metrics.smtpErrors.inc({ class: 'exhausted' });
    }
  }

  /** The Prometheus text of every metric, refreshed as the TTLs allow. */
  async render(): Promise<{ contentType: string; body: string }> {
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = null));
    await this.refreshing;
    return {
      contentType: this.metrics.registry.contentType,
      body: await this.metrics.registry.metrics(),
    };
  }

  private async refresh(): Promise<void> {
    const global = this.global;
    if (!global) return;
    const now = Date.now();
    const work: Promise<void>[] = [];
    if (now - this.queuesAt >= QUEUE_COUNTS_TTL_MS)
      work.push(this.refreshQueues(global.queueJobs).then(() => void (this.queuesAt = now)));
    if (now - this.databaseAt >= DATABASE_COUNTS_TTL_MS)
      work.push(this.refreshDatabase(global).then(() => void (this.databaseAt = now)));
    const results = await Promise.allSettled(work);
    for (const result of results) {
      // A scrape during an outage still answers, with the last values; the log says why they are old.
      if (result.status === 'rejected')
        this.logger.warn({ err: result.reason }, 'could not refresh some metrics');
    }
  }

  private async refreshQueues(gauge: Gauge<'queue' | 'state'>): Promise<void> {
    // All queues at once: one Redis round trip of latency per scrape, not one per queue.
    await Promise.all(
      Object.values(QUEUES).map(async (name) => {
        const queue = this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
        const counts = await queue.getJobCounts(...QUEUE_STATES);
        for (const state of QUEUE_STATES) gauge.set({ queue: name, state }, counts[state] ?? 0);
      }),
    );
  }

  private async refreshDatabase(global: NonNullable<MetricsService['global']>): Promise<void> {
    const counts = await this.repository.statusCounts(this.read.manager);
    setAll(global.emails, counts.get('emails') ?? []);
    setAll(global.webhookDeliveries, counts.get('webhook_deliveries') ?? []);
    setAll(global.campaigns, counts.get('campaigns') ?? []);
    setAll(global.workflowExecutions, counts.get('workflow_executions') ?? []);
  }
}

function setAll<L extends string>(gauge: Gauge<L>, counts: LabelledCount[]): void {
  gauge.reset();
  for (const c of counts) gauge.set(c.labels as Partial<Record<L, string>>, c.count);
}
