import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { OverdueKey, WorkflowsRepository } from './workflows.repository';

/** An execution this late has lost its job (or never had one: the process died after the trigger's commit). */
const OVERDUE_GRACE_MS = 5_000;
const RECOVERY_BATCH = 1000;

/**
 * Every min(RECOVERY_EVERY_MS, 5 s), across all workers: open executions
 * overdue by more than 5 s get their job again (its deterministic id, so a
 * job that exists is left alone; a repeated one finds another version and
 * does nothing). This is what makes triggers, delays and waits lossless.
 *
 * A page holds 1,000 executions, and each run goes on after the last one's
 * page (back to the oldest once a page comes back short): under a backlog,
 * the oldest overdue executions are mostly ones whose jobs are alive (held
 * by a busy worker, or waiting in the queue), and a lost job behind them
 * must not wait for the backlog to clear.
 */
@Injectable()
export class WorkflowsRecovery extends QueueRecovery {
  readonly queue = QUEUES.WORKFLOWS;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: WorkflowsRepository,
    private readonly dispatcher: WorkflowDispatcher,
  ) {
    super();
    this.everyMs = Math.min(config.recoveryEveryMs, 5_000);
  }

  /** RECOVERY_BATCH; tests lower it. */
  pageSize = RECOVERY_BATCH;
  /** Where the last page ended (in this process); null: start from the oldest. */
  private after: OverdueKey | null = null;

  async recover(): Promise<{ found: number }> {
    const overdue = await this.repository.overdue(
      this.dataSource.manager,
      OVERDUE_GRACE_MS,
      this.pageSize,
      this.after,
    );
    await this.dispatcher.enqueue(
      overdue.map((x) => ({ id: x.id, version: x.version, dueAt: null })),
    );
    this.after = overdue.length < this.pageSize ? null : overdue[overdue.length - 1].key;
    return { found: overdue.length };
  }
}
