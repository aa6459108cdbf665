import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { OverdueRecovery } from '../queue/recovery';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { OverdueKey, WorkflowExecutionsRepository } from './workflow-executions.repository';

/** An execution this late has lost its job (or never had one: the process died after the trigger's commit). */
const OVERDUE_GRACE_MS = 5_000;

/** A row of WorkflowExecutionsRepository.overdue. */
type OverdueExecution = Awaited<ReturnType<WorkflowExecutionsRepository['overdue']>>[number];

/**
 * Every min(RECOVERY_EVERY_MS, 5 s), across all workers: open executions
 * overdue by more than 5 s get their job again (its deterministic id, so a
 * job that exists is left alone; a repeated one finds another version and
 * does nothing). This is what makes triggers, delays and waits lossless.
 * Pages of OVERDUE_PAGE executions, each run going on after the last one's
 * (OverdueRecovery).
 */
@Injectable()
export class WorkflowsRecovery extends OverdueRecovery<OverdueExecution, OverdueKey> {
  readonly queue = QUEUES.WORKFLOWS;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly executions: WorkflowExecutionsRepository,
    private readonly dispatcher: WorkflowDispatcher,
  ) {
    super();
    this.everyMs = Math.min(config.recoveryEveryMs, 5_000);
  }

  protected findOverdue(limit: number, after: OverdueKey | null): Promise<OverdueExecution[]> {
    return this.executions.overdue(this.dataSource.manager, OVERDUE_GRACE_MS, limit, after);
  }

  protected requeue(overdue: OverdueExecution[]): Promise<void> {
    return this.dispatcher.enqueue(
      overdue.map((x) => ({ id: x.id, version: x.version, dueAt: null })),
    );
  }

  protected override pageKey(last: OverdueExecution): OverdueKey {
    return last.key;
  }
}
