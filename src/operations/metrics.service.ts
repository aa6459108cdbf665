import { getQueueToken } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { AppMetrics, METRICS_REGISTRY } from '../common/metrics/metrics';
import { EventHooks, EventRecordedListener, RecordedEvent } from '../events/event-hooks';
import { QUEUES } from '../queue/queue.constants';
import { LabelledCount, OperationsRepository } from './operations.repository';

/** Counts that need the database are refreshed at most this often, whatever the scrape rate. */
export const DATABASE_COUNTS_TTL_MS = 15_000;
/** Queue counts (Redis) at most this often. */
const QUEUE_COUNTS_TTL_MS = 2_000;
const QUEUE_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'failed'] as const;

/**
 * The gauges of GET /metrics that are read rather than counted: queue jobs
 * per state (Redis), and emails by status and source, webhook deliveries,
 * campaigns and workflow executions by status (Postgres, at most every 15 s, the last answer served
 * in between). Also counts email.* events as they are published.
 */
@Injectable()
export class MetricsService implements OnModuleInit, EventRecordedListener {
  private readonly logger = new Logger(MetricsService.name);
  private readonly queueJobs: Gauge<'queue' | 'state'>;
  private readonly emails: Gauge<'status' | 'source'>;
  private readonly webhookDeliveries: Gauge<'status'>;
  private readonly campaigns: Gauge<'status'>;
  private readonly workflowExecutions: Gauge<'status'>;
  private databaseAt = 0;
  private queuesAt = 0;
  private refreshing: Promise<void> | null = null;

  constructor(
    @Inject(METRICS_REGISTRY) private readonly metrics: AppMetrics,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: OperationsRepository,
    private readonly moduleRef: ModuleRef,
    private readonly hooks: EventHooks,
  ) {
    const registers = [metrics.registry];
    this.queueJobs = new Gauge({
      name: 'mailwright_queue_jobs',
      help: 'Jobs per queue and state',
      labelNames: ['queue', 'state'],
      registers,
    });
    this.emails = new Gauge({
      name: 'mailwright_emails',
      help: 'Email records by status and source (refreshed at most every 15 s)',
      labelNames: ['status', 'source'],
      registers,
    });
    this.webhookDeliveries = new Gauge({
      name: 'mailwright_webhook_deliveries',
      help: 'Outbound webhook deliveries by status (refreshed at most every 15 s)',
      labelNames: ['status'],
      registers,
    });
    this.campaigns = new Gauge({
      name: 'mailwright_campaigns',
      help: 'Campaigns by status (refreshed at most every 15 s)',
      labelNames: ['status'],
      registers,
    });
    this.workflowExecutions = new Gauge({
      name: 'mailwright_workflow_executions',
      help: 'Workflow executions by status (refreshed at most every 15 s)',
      labelNames: ['status'],
      registers,
    });
  }

  onModuleInit(): void {
    this.hooks.register(this);
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
    const now = Date.now();
    const work: Promise<void>[] = [];
    if (now - this.queuesAt >= QUEUE_COUNTS_TTL_MS)
      work.push(this.refreshQueues().then(() => void (this.queuesAt = now)));
    if (now - this.databaseAt >= DATABASE_COUNTS_TTL_MS)
      work.push(this.refreshDatabase().then(() => void (this.databaseAt = now)));
    const results = await Promise.allSettled(work);
    for (const result of results) {
      // A scrape during an outage still answers, with the last values; the log says why they are old.
      if (result.status === 'rejected')
        this.logger.warn({ err: result.reason }, 'could not refresh some metrics');
    }
  }

  private async refreshQueues(): Promise<void> {
    for (const name of Object.values(QUEUES)) {
      const queue = this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
      const counts = await queue.getJobCounts(...QUEUE_STATES);
      for (const state of QUEUE_STATES)
        this.queueJobs.set({ queue: name, state }, counts[state] ?? 0);
    }
  }

  private async refreshDatabase(): Promise<void> {
    const manager = this.dataSource.manager;
    const [emails, deliveries, campaigns, executions] = await Promise.all([
      this.repository.emailsByStatusAndSource(manager),
      this.repository.webhookDeliveriesByStatus(manager),
      this.repository.campaignsByStatus(manager),
      this.repository.workflowExecutionsByStatus(manager),
    ]);
    setAll(this.emails, emails);
    setAll(this.webhookDeliveries, deliveries);
    setAll(this.campaigns, campaigns);
    setAll(this.workflowExecutions, executions);
  }
}

function setAll<L extends string>(gauge: Gauge<L>, counts: LabelledCount[]): void {
  gauge.reset();
  for (const c of counts) gauge.set(c.labels as Partial<Record<L, string>>, c.count);
}
