import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { EventsService } from '../events/events.service';
import type { RecordedEvent } from '../events/event-hooks';
import { RecordHitJobData, TRACKING_JOBS } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { EmailHits, EmailHitsRepository } from './email-hits.repository';
import { ClickTarget } from './tracking-token';
import { TrackingLinks } from './tracking-links';

/** Hits wait this long so a burst is written as one transaction. */
const FLUSH_DELAY_MS = 20;
/** Distinct (email, kind) pairs held in memory; past this, new ones are lost (and logged). */
const MAX_PENDING = 50_000;
/** Retries of a RECORD_HIT job (exponential from 2 s: about 17 minutes in all). */
const RECORD_HIT_ATTEMPTS = 10;

/** Hits of one email and kind waiting to be written: how many, the first one's time (ms) and, for clicks, its URL. */
interface PendingHit {
  count: number;
  at: number;
  url: string | undefined;
}

type PendingHits = Record<'open' | 'click', Map<string, PendingHit>>;

function newPending(): PendingHits {
  return { open: new Map(), click: new Map() };
}

/**
 * Open and click hits. The endpoints answer at once (the pixel, the
 * redirect): a hit is counted in memory and written later, so an answer never
 * waits for Postgres and is still served when it is down.
 *
 * Every FLUSH_DELAY_MS the hits gathered (one entry per email and kind, with
 * its count, first time and first URL) are written in one transaction, one
 * statement for opens and clicks, rows locked in email id order (the lock
 * order of concurrent API processes): opens/clicks
 * += count, openedAt/clickedAt set to the first hit's time once, and one
 * `email.opened` / `email.clicked` event (data.url) for the hit that set it,
 * published after commit. When that transaction fails (database unreachable),
 * the batch becomes RECORD_HIT jobs on QUEUES.TRACKING_HITS, retried with
 * backoff by the workers; when Redis refuses them too, the hits are lost. The
 * log says which, with the count.
 */
@Injectable()
export class EmailTrackingService implements OnApplicationShutdown {
  private readonly logger = new Logger(EmailTrackingService.name);
  /** Hits not yet written, per kind and email id. */
  private pending: PendingHits = newPending();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private lostSinceLog = 0;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.TRACKING_HITS)
    private readonly queue: Queue<RecordHitJobData, unknown, typeof TRACKING_JOBS.RECORD_HIT>,
    private readonly repository: EmailHitsRepository,
    private readonly events: EventsService,
    private readonly links: TrackingLinks,
  ) {}

  /** The email of a genuine open token (counted), or null (forged: nothing recorded). */
  open(token: string): string | null {
    const emailId = this.links.verifyOpen(token);
    if (emailId) this.count(emailId, 'open');
    return emailId;
  }

  /** The signed link of a genuine click token (counted), or null. */
  click(token: string): ClickTarget | null {
    const target = this.links.verifyClick(token);
    if (target) this.count(target.emailId, 'click', target.url);
    return target;
  }

  /** Writes every hit of `hits` (a flush, or a RECORD_HIT job); throws when the database does. */
  async record(hits: RecordHitJobData[]): Promise<void> {
    // One entry per email (a job may repeat one the batch has): counts added, the earliest time (and its URL) kept.
    const merged = new Map<string, EmailHits & { url?: string }>();
    for (const hit of hits) {
      let entry = merged.get(hit.emailId);
      if (!entry)
        merged.set(
          hit.emailId,
          (entry = { emailId: hit.emailId, opens: 0, clicks: 0, openedAt: null, clickedAt: null }),
        );
      if (hit.kind === 'open') {
        entry.opens += hit.count;
        if (entry.openedAt === null || hit.at < entry.openedAt) entry.openedAt = hit.at;
      } else {
        entry.clicks += hit.count;
        if (entry.clickedAt === null || hit.at < entry.clickedAt)
          Object.assign(entry, { clickedAt: hit.at, url: hit.url });
      }
    }
    const published = await this.dataSource.transaction(async (manager) => {
      const firsts = await this.repository.recordHits(manager, [...merged.values()]);
      const happened = [
        ...firsts
          .filter((row) => row.firstOpen)
          .map((row) => ({ row, name: 'email.opened', data: {} })),
        ...firsts
          .filter((row) => row.firstClick)
          .map((row) => ({
            row,
            name: 'email.clicked',
            data: { url: merged.get(row.emailId)?.url },
          })),
      ];
      const events = await this.events.recordMany(
        manager,
        happened.map(({ row, name, data }) => ({
          projectId: row.projectId,
          contactId: row.contactId,
          emailId: row.emailId,
          name,
          data,
        })),
      );
      return events.map((event, i): RecordedEvent => ({
        ...event,
        email: happened[i].row.toEmail,
      }));
    });
    if (published.length > 0) await this.events.publish(published);
  }

  /** Writes what is pending now (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.flushing || this.pendingCount() > 0) {
      if (this.flushing) await this.flushing;
      else this.startFlush();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush().catch(() => undefined);
  }

  /** Called for every hit (the pixel's and the redirect's hot path): no allocation for an email already pending. */
  private count(emailId: string, kind: 'open' | 'click', url?: string): void {
    const pending = this.pending[kind];
    const existing = pending.get(emailId);
    if (existing) existing.count += 1;
    else if (this.pendingCount() >= MAX_PENDING) this.lost(1);
    else pending.set(emailId, { count: 1, at: Date.now(), url });
    this.timer ??= setTimeout(() => {
      this.timer = null;
      if (!this.flushing) this.startFlush();
    }, FLUSH_DELAY_MS);
  }

  private pendingCount(): number {
    return this.pending.open.size + this.pending.click.size;
  }

  private startFlush(): void {
    const batch: RecordHitJobData[] = [];
    for (const kind of ['open', 'click'] as const) {
      for (const [emailId, hit] of this.pending[kind]) {
        batch.push({
          emailId,
          kind,
          count: hit.count,
          at: new Date(hit.at).toISOString(),
          ...(hit.url ? { url: hit.url } : {}),
        });
      }
    }
    this.pending = newPending();
    this.flushing = this.write(batch).finally(() => {
      this.flushing = null;
      // Hits that came while this batch was written wait for the next one.
      if (this.pendingCount() > 0 && !this.timer)
        this.timer = setTimeout(() => {
          this.timer = null;
          if (!this.flushing) this.startFlush();
        }, FLUSH_DELAY_MS);
    });
  }

  private async write(batch: RecordHitJobData[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      await this.record(batch);
      return;
    } catch (error) {
      const hits = batch.reduce((n, h) => n + h.count, 0);
      try {
        await this.queue.addBulk(
          batch.map((data) => ({
            name: TRACKING_JOBS.RECORD_HIT,
            data,
            opts: { attempts: RECORD_HIT_ATTEMPTS, backoff: { type: 'exponential', delay: 2000 } },
          })),
        );
        this.logger.warn(
          { err: error, hits, emails: batch.length },
          'could not record open/click hits now: queued for later (record-hit jobs)',
        );
      } catch (queueError) {
        this.logger.error(
          { err: error, queueErr: queueError, hits },
          'open/click hits lost: neither the database nor Redis took them',
        );
      }
    }
  }

  private lost(n: number): void {
    if (this.lostSinceLog === 0) {
      setTimeout(() => {
        this.logger.error(
          { hits: this.lostSinceLog },
          'open/click hits lost: too many waiting to be written',
        );
        this.lostSinceLog = 0;
      }, 1000).unref();
    }
    this.lostSinceLog += n;
  }
}
