import { Processor, WorkerHost } from '@nestjs/bullmq';
import { PartitionQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { MaintenanceResult } from './partition-maintenance';
import { PartitionsSchedule } from './partitions.schedule';

/** QUEUES.PARTITIONS worker: its only job is the scheduled maintenance, one at a time. */
@Processor(QUEUES.PARTITIONS, { concurrency: 1 })
export class PartitionsProcessor extends WorkerHost {
  constructor(private readonly schedule: PartitionsSchedule) {
    super();
  }

  process(job: PartitionQueueJob): Promise<MaintenanceResult> {
    void job;
    return this.schedule.recover();
  }
}
