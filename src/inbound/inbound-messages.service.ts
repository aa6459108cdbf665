import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { ItemAnswer, MicroBatcher } from '../common/concurrency/micro-batcher';
import { INBOUND_JOBS, InboundJobData, inboundJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { InboundMessagesRepository } from './inbound-messages.repository';

/** Finished messages (and their raw bytes) are deleted this many days after processing. */
export const INBOUND_RETENTION_DAYS = 30;
/** Messages still RECEIVED whose jobs one recovery run re-adds, oldest first. */
const RECOVERY_PAGE = 1000;
/** Rows one recovery run deletes past their retention (the next run goes on). */
const RETENTION_PAGE = 5000;
/** Messages one group commit of the listener writes at most (one statement). */
const STORE_BATCH = 64;
/** Group commits in flight at once (each holds a pool connection). */
const STORES_IN_FLIGHT = 2;
/** Group commits whose messages one job carries at most. */
const JOB_GROUPS = 16;
/** How long a committed group waits for others to share its job (the 250s do not wait for it). */
const JOB_WINDOW_MS = 10;

type Incoming = { raw: Buffer; mailFrom: string; rcptTo: string[] };

/**
 * The stored side of inbound mail: the listener's durable write and its job,
 * the recovery of messages whose job was lost, and retention.
 */
@Injectable()
export class InboundMessagesService {
  private readonly logger = new Logger(InboundMessagesService.name);
  private readonly adding = new Set<Promise<unknown>>();
  /**
   * Group commit: a message arriving while a write is in flight waits for
   * the next one, which carries every message that arrived meanwhile, so
   * an idle listener writes at once and a busy one pays one statement,
   * one WAL flush per batch (and a share of one job: `jobs`).
   */
  private readonly batcher = new MicroBatcher<Incoming, string>(
    { maxBatch: STORE_BATCH, maxInFlight: STORES_IN_FLIGHT, start: 'now' },
    (messages) => this.storeMany(messages),
  );
  /**
   * The jobs of group commits: the groups committed within JOB_WINDOW_MS of each other, or while
   * an add is in flight, share one job, so a busy listener adds (and the worker fetches, locks
   * and finishes) one job for several groups of a few messages each instead of one per group.
   */
  private readonly jobs = new MicroBatcher<string[], void>(
    { maxBatch: JOB_GROUPS, maxInFlight: 1, start: JOB_WINDOW_MS },
    async (groups) => {
      await this.enqueueGroup(groups.flat());
      return groups.map(() => undefined);
    },
  );

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.INBOUND)
    private readonly queue: Queue<InboundJobData, unknown, typeof INBOUND_JOBS.PROCESS>,
    private readonly messages: InboundMessagesRepository,
  ) {}

  /**
   * Stores a message and adds its job. The row is committed when this
   * returns, or it throws (with every message of its group commit). The job
   * is added after, shared with the groups committed beside it: a lost add
   * (Redis down, the process killed) leaves the message RECEIVED, and the
   * recovery adds its job.
   */
  store(message: Incoming): Promise<string> {
    return this.batcher.submit(message);
  }

  /** Resolves once the jobs of every message stored so far are added (or given up to the recovery). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.adding]);
  }

  /** A batch refused as a whole (one message Postgres rejects) is written again one message at a time. */
  private async storeMany(messages: Incoming[]): Promise<ItemAnswer<string>[]> {
    let ids: string[];
    try {
      ids = await this.messages.insertMany(this.dataSource.manager, messages);
    } catch (error) {
      if (messages.length === 1) throw error;
      return messages.map(async (message) => (await this.storeMany([message]))[0]);
    }
    // The 250 waits for the row only: the job is added meanwhile, and a lost add is the recovery's.
    const adding = this.jobs
      .submit(ids)
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, inboundMessageIds: ids },
          'inbound messages stored but their job was not added; the recovery will add it',
        ),
      )
      .finally(() => this.adding.delete(adding));
    this.adding.add(adding);
    return ids;
  }

  /** One PROCESS job for these messages, under the first one's id. */
  private async enqueueGroup(ids: string[]): Promise<void> {
    await this.queue.add(
      INBOUND_JOBS.PROCESS,
      { inboundMessageId: ids[0], ...(ids.length > 1 ? { inboundMessageIds: ids } : {}) },
      { jobId: inboundJobId(ids[0]) },
    );
  }

  /** One PROCESS job per message, under its own id (a no-op while it exists). */
  private enqueueEach(ids: string[]): Promise<unknown> {
    return this.queue.addBulk(
      ids.map((id) => ({
        name: INBOUND_JOBS.PROCESS,
        data: { inboundMessageId: id },
        opts: { jobId: inboundJobId(id) },
      })),
    );
  }

  /**
   * The inbound queue's recovery (InboundRecovery): re-adds the jobs of
   * messages still RECEIVED (their ids make that a no-op when the job exists)
   * and deletes finished messages past INBOUND_RETENTION_DAYS.
   */
  async recover(now = new Date()): Promise<{ found: number; deleted: number }> {
    const ids = await this.messages.findReceived(this.dataSource.manager, RECOVERY_PAGE);
    if (ids.length > 0) await this.enqueueEach(ids);
    const before = new Date(now.getTime() - INBOUND_RETENTION_DAYS * 24 * 3_600_000);
    const deleted = await this.messages.deleteProcessedBefore(
      this.dataSource.manager,
      before,
      RETENTION_PAGE,
    );
    if (deleted > 0) this.logger.log({ deleted }, 'deleted inbound messages past their retention');
    return { found: ids.length, deleted };
  }
}
