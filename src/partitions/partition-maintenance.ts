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
    const tables: Array<[PartitionedTable, number | null]> = [
      ['events', this.config.eventRetentionDays],
      ['emails', this.config.emailRetentionDays],
    ];
    // New months first, for both tables: a failing drop must never keep next month from existing.
    const created: string[] = [];
    const changed = new Set<PartitionedTable>();
    let ensureError: unknown = null;
    for (const [table] of tables) {
      try {
        const made = await this.dataSource.transaction(async (manager) => {
          await this.partitions.lockMaintenance(manager);
          return this.partitions.ensure(manager, table, MONTHS_AHEAD);
        });
        created.push(...made);
        if (made.length > 0) changed.add(table);
      } catch (error) {
        ensureError ??= error;
        this.logger.error({ err: error, table }, 'creating partitions failed');
      }
    }
    const dropped: string[] = [];
    for (const [table, days] of tables) {
      if (days === null) continue;
      try {
        const gone = await this.dropExpired(table, days);
        dropped.push(...gone);
        if (gone.length > 0) changed.add(table);
      } catch (error) {
        // The next run tries again (an interrupted detach it finishes); the months ahead are made.
        this.logger.warn({ err: error, table }, 'dropping expired partitions failed');
      }
    }
    // About once a month per table: when its set of partitions changed.
    for (const table of changed) await this.partitions.analyze(this.dataSource.manager, table);
    if (created.length > 0 || dropped.length > 0)
      this.logger.log({ created, dropped }, 'partitions maintained');
    // A failed creation fails the job, so that it shows; drops only warn.
    if (ensureError) throw ensureError;
    return { created, dropped };
  }

  /**
   * Drops the table's months past the retention: DETACH PARTITION
   * CONCURRENTLY first (no lock that blocks reads or writes of the table,
   * so no deadlock with an update by id, which locks every month), then the
   * detached month's foreign keys in short transactions of their own, then
   * the bookkeeping and DROP TABLE on the detached month in one transaction.
   * What an interrupted run left (a month detach pending, or detached but
   * not dropped) is finished first. An emails month that still holds
   * QUEUED or SENDING emails is kept until they are done.
   */
  private async dropExpired(table: PartitionedTable, days: number): Promise<string[]> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    const dropped: string[] = [];
    try {
      await this.partitions.lockMaintenanceSession(runner);
      try {
        const manager = runner.manager;
        for (const name of await this.partitions.detachPending(manager, table))
          await this.partitions.detach(runner, table, name);
        const drop = async (name: string) => {
          // First, briefly, what locks other tables; then the slow DROP locks the month alone.
          await this.partitions.dropForeignKeys(runner, name);
          await manager.transaction(async (tx) => {
            await this.partitions.lockMaintenance(tx);
            await this.partitions.dropDetached(tx, table, name);
          });
          dropped.push(name);
        };
        for (const name of await this.partitions.detachedLeftovers(manager, table))
          await drop(name);
        const expired = (await this.partitions.partitions(manager, table)).filter(
          (partition) => partition.upper.getTime() <= Date.now() - days * DAY_MS,
        );
        // Month by month, so that a failure leaves at most one month detached and not dropped.
        for (const { name } of expired) {
          if (table === 'emails' && (await this.partitions.hasOpenEmails(manager, name))) {
            this.logger.warn(
              { partition: name },
              'partition kept past the retention: it still holds QUEUED or SENDING emails',
            );
            continue;
          }
          await this.partitions.detach(runner, table, name);
          await drop(name);
        }
      } finally {
        await this.partitions.unlockMaintenanceSession(runner);
      }
    } finally {
      await runner.release();
    }
    return dropped;
  }
}
