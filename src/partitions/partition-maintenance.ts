import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { PartitionedTable, PartitionsRepository } from './partitions.repository';

/** The contract: partitions exist at least two months ahead. */
export const MONTHS_AHEAD = 2;

const DAY_MS = 24 * 3_600_000;

export interface MaintenanceResult {
  created: string[];
  dropped: string[];
}

/**
 * Keeps the monthly partitions of `events` and `emails`: creates them
 * MONTHS_AHEAD months ahead, and drops a whole month once all of it is
 * older than EVENT_RETENTION_DAYS / EMAIL_RETENTION_DAYS (unset: never).
 * The legacy partition (the rows from before partitioning, up to its bound)
 * goes the same way once its bound is past the age.
 */
@Injectable()
export class PartitionMaintenance {
  private readonly logger = new Logger(PartitionMaintenance.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly partitions: PartitionsRepository,
  ) {}

  async maintain(): Promise<MaintenanceResult> {
    const created: string[] = [];
    const dropped: string[] = [];
    const retention: Array<[PartitionedTable, number | null]> = [
      ['events', this.config.eventRetentionDays],
      ['emails', this.config.emailRetentionDays],
    ];
    for (const [table, days] of retention) {
      const made = await this.dataSource.transaction(async (manager) => {
        await this.partitions.lockMaintenance(manager);
        return this.partitions.ensure(manager, table, MONTHS_AHEAD);
      });
      created.push(...made);
      const expired =
        days === null
          ? []
          : (await this.partitions.partitions(this.dataSource.manager, table)).filter(
              (partition) => partition.upper.getTime() <= Date.now() - days * DAY_MS,
            );
      // One transaction per month: each holds its locks only for its own drop.
      for (const partition of expired) {
        await this.dataSource.transaction(async (manager) => {
          await this.partitions.lockMaintenance(manager);
          await this.partitions.drop(manager, table, partition.name);
        });
        dropped.push(partition.name);
      }
      // About once a month per table: when its set of partitions changed.
      if (made.length > 0 || expired.length > 0)
        await this.partitions.analyze(this.dataSource.manager, table);
    }
    if (created.length > 0 || dropped.length > 0)
      this.logger.log({ created, dropped }, 'partitions maintained');
    return { created, dropped };
  }
}
