import { Module } from '@nestjs/common';
import { PartitionMaintenance } from './partition-maintenance';
import { PartitionsProcessor } from './partitions.processor';
import { PartitionsRepository } from './partitions.repository';
import { PartitionsSchedule } from './partitions.schedule';

/**
 * The monthly partitions of `events` and `emails` and their retention
 * (docs/scaling.md, "Partitions and retention"). It reads and drops other
 * features' tables through SQL only and imports none of them.
 */
@Module({
  providers: [PartitionsRepository, PartitionMaintenance, PartitionsSchedule, PartitionsProcessor],
  exports: [PartitionMaintenance],
})
export class PartitionsModule {}
