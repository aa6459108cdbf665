import { InjectQueue } from '@nestjs/bullmq';
import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import type { Queue } from 'bullmq';
import { Client } from 'pg';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { SEGMENT_EVALUATE_JOB_ID, SEGMENT_JOBS } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { DIRTY_CHANNEL } from './segment-membership.repository';

/**
 * The EVALUATE job's fixed id: while one waits, adding another is a no-op,
 * so a burst of notifications from every worker process makes one job.
 * Removed on completion (and failure), so the id is free again at once.
 */

const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 10_000;

/**
 * Wakes the membership evaluator fast. In worker processes (APP_ROLE worker
 * or all) it holds one LISTEN connection (a plain pg Client on DATABASE_DIRECT_URL: a session)
 * on the channel the dirty-marking triggers notify at commit, and on each
 * notification adds the EVALUATE job (fixed id). Reconnects with backoff
 * after an error, and wakes once after every (re)connect for notifications
 * missed meanwhile.
 *
 * The one gap of a fixed id: a notification arriving while the job is
 * already running after its last look at the table is dropped by the
 * dedupe. The processor closes it: when an EVALUATE job completes (and its
 * id is free), it looks for unclaimed dirty rows and wakes again
 * (SegmentMembershipProcessor.onCompleted). A notification lost any other
 * way (no worker listening, the connection down) is covered by the sweep,
 * which evaluates every dirty row left.
 */
@Injectable()
export class SegmentDirtyListener implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(SegmentDirtyListener.name);
  private client: Client | null = null;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private reconnectDelay = RECONNECT_MIN_MS;
  private stopped = true;
  private shuttingDown = false;
  private adding: Promise<void> | null = null;
  private again = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.SEGMENTS) private readonly queue: Queue,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (runsWorkers(this.config)) await this.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    await this.stop();
  }

  /** Starts listening (worker processes do at boot). */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    await this.connect();
  }

  /** Stops listening; a wake-up under way finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
    await this.adding;
  }

  get listening(): boolean {
    return this.client !== null;
  }

  /**
   * Adds the EVALUATE job unless one waits. At most one add in flight per
   * process: wake-ups during it fold into one more add after it.
   */
  wake(): void {
    if (this.shuttingDown) return;
    if (this.adding) {
      this.again = true;
      return;
    }
    this.adding = this.addJobs().finally(() => {
      this.adding = null;
    });
  }

  private async addJobs(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.queue.add(
          SEGMENT_JOBS.EVALUATE,
          {},
          {
            jobId: SEGMENT_EVALUATE_JOB_ID,
            removeOnComplete: true,
            removeOnFail: true,
            attempts: 3,
            backoff: { type: 'fixed', delay: 250 },
          },
        );
      } catch (error) {
        // The sweep evaluates what this wake-up would have.
        this.logger.warn({ err: error }, 'cannot add the segment evaluation job');
        return;
      }
    } while (this.again);
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.config.databaseDirectUrl,
      application_name: 'mailwright-segments-listen',
      keepAlive: true,
    });
    client.on('notification', () => this.wake());
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, null));
    try {
      await client.connect();
      await client.query(`LISTEN ${DIRTY_CHANNEL}`);
    } catch (error) {
      this.lost(client, error);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reconnectDelay = RECONNECT_MIN_MS;
    // Anything marked while nobody listened.
    this.wake();
  }

  private lost(client: Client, error: unknown): void {
    if (this.client !== null && this.client !== client) return;
    this.client = null;
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    client.end().catch(() => undefined);
    if (this.stopped || this.reconnectTimer) return;
    this.logger.warn(
      { err: error ?? undefined, retryInMs: this.reconnectDelay },
      'segment membership LISTEN connection lost; reconnecting',
    );
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, this.reconnectDelay);
    this.reconnectTimer.unref();
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, RECONNECT_MAX_MS);
  }
}
