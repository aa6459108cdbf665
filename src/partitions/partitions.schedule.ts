import { Injectable } from '@nestjs/common';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { MaintenanceResult, PartitionMaintenance } from './partition-maintenance';

/** Hourly: partitions are kept two months ahead, so a run that fails (a lock timeout) costs nothing. */
const EVERY_MS = 3_600_000;

/**
 * The partitions queue's scheduled job, through the scheduler every queue's
 * recovery uses (queue/recovery.ts): one job per hour across all workers,
 * and one at the first worker's boot on a fresh Redis.
 */
@Injectable()
export class PartitionsSchedule extends QueueRecovery {
  readonly queue = QUEUES.PARTITIONS;
  readonly everyMs = EVERY_MS;

  constructor(private readonly maintenance: PartitionMaintenance) {
    super();
  }

  recover(): Promise<MaintenanceResult> {
    return this.maintenance.maintain();
  }
}
