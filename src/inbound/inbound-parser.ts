import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Piscina } from 'piscina';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import type { ParsedInbound } from './parsed-inbound';

/**
 * The compiled thread entry: under ts-jest this file runs from src/, but threads load JavaScript,
 * so they take the build's copy (npm test builds first), as the render pool does.
 */
const THREAD_FILE = __filename.endsWith('.ts')
  ? resolve(__dirname, '../../dist/inbound/parsers/parse-thread.js')
  : resolve(__dirname, 'parsers/parse-thread.js');
/**
 * A batch's parse stops after this long (the thread is terminated and replaced): the parsers are
 * bounded (the first MiB, 100 parts, scans of 64 K characters), so only a message that defeats
 * them gets here; its batch then runs message by message and that one message's job fails.
 * Counted from the hand-over (a batch may wait behind the other one in flight, a short wait).
 */
const PARSE_TIMEOUT_MS = 30_000;

/**
 * Parses inbound messages (parsers/parseInbound) on a thread of its own instead of the event
 * loop: mail from the internet is parsed while the same loop answers the listener's SMTP
 * sessions (and, with APP_ROLE=all, API requests), so a batch of parses no longer holds their
 * answers back, and the parse takes the second core. One thread: batches wait for each other.
 */
@Injectable()
export class InboundParser implements OnApplicationBootstrap, OnApplicationShutdown {
  private pool: Piscina | null = null;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /**
   * A process that runs the listener parses what it takes in: its thread starts with the
   * process, so the first messages do not wait for a thread to start and load mailparser while
   * their senders are still connected. Other processes start it with their first batch.
   */
  onApplicationBootstrap(): void {
    if (this.config.inboundSmtpPort !== null && runsWorkers(this.config) && existsSync(THREAD_FILE))
      this.threadPool();
  }

  /** One parse per raw message, in order; rejects when the thread failed or timed out (the batch runs again). */
  parseMany(raws: Buffer[]): Promise<ParsedInbound[]> {
    if (raws.length === 0) return Promise.resolve([]);
    return this.threadPool().run(raws, {
      signal: AbortSignal.timeout(PARSE_TIMEOUT_MS),
    }) as Promise<ParsedInbound[]>;
  }

  async onApplicationShutdown(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    await pool?.destroy();
  }

  private threadPool(): Piscina {
    if (!this.pool && !existsSync(THREAD_FILE))
      throw new Error(`${THREAD_FILE} is missing: run npm run build (npm test does)`);
    this.pool ??= new Piscina({
      filename: THREAD_FILE,
      // Started once and kept: a start loads mailparser (tens of milliseconds).
      minThreads: 1,
      maxThreads: 1,
    });
    return this.pool;
  }
}
