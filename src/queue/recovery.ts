import { getQueueToken } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import type { JobSchedulerTemplateOptions, Queue } from 'bullmq';
import { RecoverableQueue, RECOVERY_SCHEDULERS } from './jobs';

/**
 * How a queue gets back the jobs of committed rows whose job was never added
 * (the process died between commit and enqueue) or was lost (Redis restarted
 * empty, a job removed by hand).
 *
 * A feature subclasses QueueRecovery once per queue, lists it in its module's
 * providers, and lets its processor hand the queue's recovery job
 * (RECOVERY_SCHEDULERS[queue].jobName) to recover(). RecoveryScheduler finds
 * every subclass and, in worker roles only, upserts one BullMQ job scheduler
 * for each: every worker upserts the same fixed id, so a deployment has one
 * scheduler per queue and each interval produces one recovery job, which one
 * worker runs.
 */
export abstract class QueueRecovery {
  /** The queue whose open rows this recovers; its recovery job runs on that queue. */
  abstract readonly queue: RecoverableQueue;
  /** Interval of the scheduler. */
  abstract readonly everyMs: number;

  /**
   * Finds rows stuck in an open status and re-adds their jobs with their
   * deterministic job ids, so a row whose job exists is left alone. Runs in
   * the processor of `queue`; what it returns is the job's result.
   */
  abstract recover(): Promise<unknown>;
}

/** Rows an overdue recovery re-adds per run. */
export const OVERDUE_PAGE = 1000;

/**
 * The recovery of a queue whose rows carry a due time (workflow executions,
 * webhook deliveries): each run reads a page of open rows overdue by more
 * than a grace period (the job was never added, was lost, or its worker
 * died) and re-adds their jobs under their deterministic ids, so a row whose
 * job exists is left alone. The subclass holds the query and the enqueue.
 *
 * A subclass that gives `pageKey` goes on after the last page's end at its
 * next run, back to the oldest once a page comes back short: under a
 * backlog the oldest overdue rows are mostly ones whose jobs are alive (held
 * by a busy worker, or waiting in the queue), and a lost job behind them
 * must not wait for the backlog to clear. Without it each run starts from
 * the oldest.
 */
export abstract class OverdueRecovery<Row, Key = never> extends QueueRecovery {
  /** OVERDUE_PAGE; tests lower it. */
  pageSize = OVERDUE_PAGE;
  /** Where the last page ended (in this process); null: start from the oldest. */
  private after: Key | null = null;

  /** Up to `limit` overdue open rows, oldest first, after `after` when given. */
  protected abstract findOverdue(limit: number, after: Key | null): Promise<Row[]>;
  /** Re-adds these rows' jobs (their deterministic ids: one that exists is left alone). */
  protected abstract requeue(rows: Row[]): Promise<void>;

  /** The key a page ending at `row` goes on after; null: every run starts from the oldest. */
  protected pageKey(row: Row): Key | null {
    void row;
    return null;
  }

  async recover(): Promise<{ found: number }> {
    const rows = await this.findOverdue(this.pageSize, this.after);
    await this.requeue(rows);
    this.after = rows.length < this.pageSize ? null : this.pageKey(rows[rows.length - 1]);
    return { found: rows.length };
  }
}

/**
 * A recovery job is not retried: the next interval runs it again anyway, and
 * retries would pile up behind a failing database. Little history is kept.
 */
const RECOVERY_JOB_OPTIONS: JobSchedulerTemplateOptions = {
  attempts: 1,
  removeOnComplete: { count: 100 },
  removeOnFail: { count: 100 },
};

/** Longest wait before this worker notices that Redis lost a scheduler. */
const MAX_CHECK_EVERY_MS = 60_000;

/**
 * Registers the recovery schedulers (QueueWorkersService.start, worker roles
 * only) and keeps them there.
 *
 * - At boot each scheduler is upserted. Upserting an existing scheduler with
 *   the same interval keeps its next run where it was (several workers
 *   booting at once change nothing); a new one, or one whose interval
 *   changed, runs its first job at once. So a fresh Redis gets its recovery
 *   right at the first worker's boot.
 * - While the worker runs, it checks every min(interval, 1 min) that each
 *   scheduler still exists and re-creates a missing one (Redis restarted
 *   empty under running workers: exactly when jobs were lost). Only the
 *   check is per worker; the recovery itself still runs once per interval.
 */
@Injectable()
export class RecoveryScheduler {
  private readonly logger = new Logger('RecoveryScheduler');
  private recoveries: QueueRecovery[] = [];
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** The recoveries of the app, one per queue. */
  discover(): QueueRecovery[] {
    const recoveries = this.discovery
      .getProviders()
      .map((wrapper) => wrapper.instance as unknown)
      .filter((instance): instance is QueueRecovery => instance instanceof QueueRecovery);
    const seen = new Set<string>();
    for (const recovery of recoveries) {
      if (seen.has(recovery.queue))
        throw new Error(`more than one QueueRecovery for the ${recovery.queue} queue`);
      seen.add(recovery.queue);
    }
    return recoveries;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.recoveries = this.discover();
    for (const recovery of this.recoveries) {
      await this.upsert(recovery);
      this.logger.log(
        {
          queue: recovery.queue,
          scheduler: RECOVERY_SCHEDULERS[recovery.queue].id,
          everyMs: recovery.everyMs,
        },
        'recovery scheduled',
      );
    }
    this.scheduleCheck();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.checking;
  }

  private queueOf(recovery: QueueRecovery): Queue {
    return this.moduleRef.get<Queue>(getQueueToken(recovery.queue), { strict: false });
  }

  private async upsert(recovery: QueueRecovery): Promise<void> {
    const { id, jobName } = RECOVERY_SCHEDULERS[recovery.queue];
    const queue = this.queueOf(recovery);
    // An upsert that changes `every` keeps the scheduler's old phase (its
    // `offset` within the old interval; bullmq 5.81), and a run that catches
    // up after missed ones is then put off by up to the old interval. A
    // scheduler whose interval changes is replaced whole instead.
    const existing = await queue.getJobScheduler(id);
    if (existing && existing.every !== recovery.everyMs) await queue.removeJobScheduler(id);
    await queue.upsertJobScheduler(
      id,
      { every: recovery.everyMs },
      { name: jobName, data: {}, opts: RECOVERY_JOB_OPTIONS },
    );
  }

  private scheduleCheck(): void {
    if (this.stopped || this.recoveries.length === 0) return;
    const everyMs = Math.min(MAX_CHECK_EVERY_MS, ...this.recoveries.map((r) => r.everyMs));
    this.timer = setTimeout(() => {
      this.checking = this.recreateMissing().finally(() => this.scheduleCheck());
    }, everyMs);
    this.timer.unref();
  }

  private async recreateMissing(): Promise<void> {
    for (const recovery of this.recoveries) {
      if (this.stopped) return;
      try {
        const queue = this.queueOf(recovery);
        const id = RECOVERY_SCHEDULERS[recovery.queue].id;
        if (await queue.getJobScheduler(id)) continue;
        await this.upsert(recovery);
        this.logger.warn(
          { queue: recovery.queue, scheduler: id },
          'recovery scheduler was missing from Redis; re-created',
        );
      } catch (error) {
        this.logger.warn(
          { err: error, queue: recovery.queue },
          'cannot check the recovery scheduler; the next check retries',
        );
      }
    }
  }
}
