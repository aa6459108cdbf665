import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { INBOUND_JOBS, InboundJobData, inboundJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { InboundMessagesRepository } from './inbound-messages.repository';

/** Finished messages (and their raw bytes) are deleted this many days after processing. */
export const INBOUND_RETENTION_DAYS = 30;
/** Messages still RECEIVED whose jobs one recovery run re-adds, oldest first. */
const RECOVERY_PAGE = 1000;
/** Rows one recovery run deletes past their retention (the next run goes on). */
const RETENTION_PAGE = 5000;

/**
 * The stored side of inbound mail: the listener's durable write and its job,
 * the recovery of messages whose job was lost, and retention.
 */
@Injectable()
export class InboundMessagesService {
  private readonly logger = new Logger(InboundMessagesService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.INBOUND)
    private readonly queue: Queue<InboundJobData, unknown, typeof INBOUND_JOBS.PROCESS>,
    private readonly messages: InboundMessagesRepository,
  ) {}

  /**
   * Stores a message and adds its job. The row is committed when this
   * returns, or it throws. A lost enqueue (Redis down) does not throw: the
   * message is stored, and the recovery finds it still RECEIVED.
   */
  async store(message: { raw: Buffer; mailFrom: string; rcptTo: string[] }): Promise<string> {
    const id = await this.messages.insert(this.dataSource.manager, message);
    try {
      await this.enqueue(id);
    } catch (error) {
      this.logger.warn(
        { err: error, inboundMessageId: id },
        'inbound message stored but its job was not added; the recovery will add it',
      );
    }
    return id;
  }

  enqueue(id: string): Promise<unknown> {
    return this.queue.add(
      INBOUND_JOBS.PROCESS,
      { inboundMessageId: id },
      { jobId: inboundJobId(id) },
    );
  }

  /**
   * The inbound queue's recovery (InboundRecovery): re-adds the jobs of
   * messages still RECEIVED (their ids make that a no-op when the job exists)
   * and deletes finished messages past INBOUND_RETENTION_DAYS.
   */
  async recover(now = new Date()): Promise<{ found: number; deleted: number }> {
    const ids = await this.messages.findReceived(this.dataSource.manager, RECOVERY_PAGE);
    if (ids.length > 0) {
      await this.queue.addBulk(
        ids.map((id) => ({
          name: INBOUND_JOBS.PROCESS,
          data: { inboundMessageId: id },
          opts: { jobId: inboundJobId(id) },
        })),
      );
    }
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
