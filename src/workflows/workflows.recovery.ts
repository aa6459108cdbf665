import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { WorkflowsRepository } from './workflows.repository';

/** An execution this late has lost its job (or never had one: the process died after the trigger's commit). */
const OVERDUE_GRACE_MS = 5_000;
const RECOVERY_BATCH = 1000;

/**
 * Every min(RECOVERY_EVERY_MS, 5 s), across all workers: open executions
 * overdue by more than 5 s get their job again (its deterministic id, so a
 * job that exists is left alone; a repeated one finds another version and
 * does nothing). This is what makes triggers, delays and waits lossless.
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

  async recover(): Promise<{ found: number }> {
    const overdue = await this.repository.overdue(this.dataSource.manager, OVERDUE_GRACE_MS, RECOVERY_BATCH);
    await this.dispatcher.enqueue(overdue.map((x) => ({ ...x, dueAt: null })));
    return { found: overdue.length };
  }
}
