import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { wholeProjectSettings } from '../conditions/condition-compiler';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ConditionsService } from '../conditions/conditions.service';
import { EmailSource } from '../sending/email.entity';
import { BulkEmailSpec, EmailsService } from '../sending/emails.service';
import { Campaign, CampaignStatus } from './campaign.entity';
import { CampaignStatusService } from './campaign-status.service';
import { CampaignsRepository } from './campaigns.repository';
import { CampaignsService } from './campaigns.service';
import { DisabledProjects } from '../projects/disabled-projects';
import type { Paused } from '../queue/parked-jobs';
import { WorkerShutdown } from '../queue/worker-shutdown';

/**
 * Contacts per fan-out batch (one transaction, one INSERT, one committed
 * resume point) once it is under way. The first batch is small so that
 * delivery starts at once; each next one doubles up to this size, where the
 * batch's few round trips, which wait behind delivery's rendering on the
 * worker's event loop, cost little against its rows.
 */
export const FANOUT_BATCH = 10_000;
const FIRST_FANOUT_BATCH = 500;
/**
 * After its first batch the fan-out waits (at most this long) for the first
 * message to be handed to SMTP: the first messages are rendered and their
 * SMTP sessions opened on the same event loop as the fan-out, and bigger
 * batches meanwhile put the first message at the sink at 0.9-1.2 s instead
 * of 0.7 s (bench:campaign). It costs the fan-out this much at most, once.
 */
const FIRST_MESSAGE_WAIT_MS = 1000;
const FIRST_MESSAGE_POLL_MS = 25;
/**
 * Campaign delivery jobs kept waiting in Redis, all campaigns together: fed
 * in chunks as delivery drains, so Redis never holds a whole audience. A
 * second's worth of the fastest delivery (the feed tops up after every
 * fan-out batch and every POLL_MS); a deeper backlog only spends the worker's
 * event loop on adding jobs while the first messages wait to be rendered
 * (5,000 put the first message at 1.6 s instead of 0.8 s). Under a lower
 * EMAIL_RATE_PER_SECOND it is a second's worth of that rate (at least
 * FEED_LOW_WATER): a campaign started later queues behind this backlog.
 */
export const FEED_HIGH_WATER = 1000;
/** The backlog kept under a very low rate: several POLL_MS of delivery at any rate up to it. */
const FEED_LOW_WATER = 50;
const FEED_CHUNK = 500;
/** A feed's first chunk: the first messages' jobs reach a worker before the rest are added. It doubles up to FEED_CHUNK. */
const FIRST_FEED_CHUNK = 50;
/** How often a campaign whose records all exist checks for the end of delivery while the feed still has records to hand over. */
const POLL_MS = 300;
/**
 * Once every record has been handed to delivery, the RUN job waits delayed in
 * the queue this long between checks for the end of delivery instead of
 * polling in a worker slot: the last emails can take a retry schedule (or a
 * recovery) to end, and the slot runs other campaigns meanwhile.
 */
const TAIL_CHECK_MS = 1_000;
/** A feed that reached the end starts over at most this often while emails stay QUEUED (a lost job). */
const REFEED_EVERY_MS = 10_000;

/** `Paused`: the project is disabled; the processor parks the job until it is enabled. */
export type RunOutcome = 'sent' | 'stopped' | 'gone' | { notDueUntil: Date } | Paused;

/** A run handed back because the process is shutting down: the job runs again this soon, here or elsewhere. */
const HAND_BACK_MS = 1_000;

/**
 * Runs one campaign inside its RUN job: starts it when due, creates its
 * email records (the fan-out), keeps delivery fed, and marks it SENT.
 *
 * Fan-out: the audience is read through a cursor in one REPEATABLE READ
 * transaction, so every batch sees the contacts as they were when the
 * fan-out began; each batch commits its email records together with the
 * resume point (the last contact id) under the campaign's row lock. The
 * unique (campaign, contact) index makes a repeated batch insert nothing.
 * A job that dies resumes from the committed cursor in a new snapshot
 * (contacts created after the start still never join).
 *
 * Feed: delivery jobs are added in contact order (one job per email, job id
 * = email id) while fewer than the campaign's share of the backlog wait in
 * Redis. The backlog is divided equally between the projects with a SENDING
 * campaign, and a project's share between its campaigns: campaign jobs run
 * first in, first out, so each project then has the same number of jobs in
 * line and gets the same part of EMAIL_RATE_PER_SECOND (docs/campaigns.md,
 * "Sharing the email rate").
 * Once every record has its job, the RUN job goes back to the queue delayed
 * (TAIL_CHECK_MS) between checks for the end of delivery: it holds no worker
 * slot while the last emails wait out their retries.
 */
@Injectable()
export class CampaignRunner {
  private readonly logger = new Logger(CampaignRunner.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: CampaignsRepository,
    private readonly campaigns: CampaignsService,
    private readonly status: CampaignStatusService,
    private readonly conditions: ConditionsService,
    private readonly emails: EmailsService,
    private readonly shutdown: WorkerShutdown,
    private readonly disabledProjects: DisabledProjects,
  ) {}

  async run(campaignId: string): Promise<RunOutcome> {
    const campaign = await this.status.startIfDue(campaignId);
    if (!campaign) return 'gone';
    const paused = (): Promise<boolean> => this.disabledProjects.isDisabled(campaign.projectId);
    if (campaign.status === CampaignStatus.SCHEDULED) {
      // Due but held back by a disabled project: parked until the project is enabled.
      if (await paused()) return { pausedFor: campaign.projectId };
      // Woken early (the schedule moved later): the job waits again.
      return { notDueUntil: campaign.scheduledAt ?? new Date() };
    }
    if (campaign.status !== CampaignStatus.SENDING) return 'stopped';
    if (await paused()) return { pausedFor: campaign.projectId };
    const feed = new Feed(
      this.emails,
      this.repository,
      this.dataSource.manager,
      campaign,
      feedHighWater(this.config.emailRatePerSecond),
    );
    if (!campaign.fanoutDone) {
      const fanned = await this.fanOut(campaign, feed, paused);
      if (fanned === 'stopped') return 'stopped';
      if (fanned === 'handed-back') return handBack();
      if (fanned === 'paused') return { pausedFor: campaign.projectId };
    }
    for (;;) {
      if (this.shutdown.stopping) return handBack();
      // A project disabled mid-send: the feed stops (delivery parks what it already holds).
      if (await paused()) return { pausedFor: campaign.projectId };
      await feed.topUp(true);
      if (await this.status.finishIfDone(campaign.id)) return 'sent';
      const current = await this.repository.findById(
        this.dataSource.manager,
        campaign.projectId,
        campaign.id,
      );
      if (!current || current.status !== CampaignStatus.SENDING) return 'stopped';
      if (feed.exhausted) return { notDueUntil: new Date(Date.now() + TAIL_CHECK_MS) };
      await sleep(POLL_MS);
    }
  }

  /**
   * 'stopped' when the campaign stopped being SENDING (cancelled) on the way;
   * 'handed-back' when the process began shutting down between two batches,
   * 'paused' when the project was disabled between two batches (the
   * committed cursor is where the next run resumes).
   */
  private async fanOut(
    campaign: Campaign,
    feed: Feed,
    paused: () => Promise<boolean>,
  ): Promise<'done' | 'stopped' | 'handed-back' | 'paused'> {
    const manager = this.dataSource.manager;
    const compiled = await this.conditions.compile(
      manager,
      this.campaigns.audienceCondition(campaign),
      {
        projectId: campaign.projectId,
        contactAlias: 'c',
        purpose: 'count',
      },
    );
    const spec: BulkEmailSpec = {
      projectId: campaign.projectId,
      source: EmailSource.CAMPAIGN,
      campaignId: campaign.id,
      contentId: campaign.contentId as string,
      subject: campaign.subject,
      marketing: true,
      trackOpens: campaign.trackOpens,
      trackClicks: campaign.trackClicks,
      from: { email: campaign.fromEmail, name: campaign.fromName },
      replyTo: campaign.replyTo,
    };
    const startedAt = campaign.startedAt as Date;
    const resumeFrom = campaign.fanoutCursor;
    const before = resumeFrom ? await this.repository.counts(manager, campaign.id) : null;
    const snapshot = this.dataSource.createQueryRunner();
    await snapshot.connect();
    try {
      // BACKGROUND_STATEMENT_TIMEOUT_MS bounds each statement of this snapshot (a FETCH, the
      // audience count), not the transaction: a long fan-out is many short statements.
      await snapshot.startTransaction('REPEATABLE READ');
      for (const setting of wholeProjectSettings(compiled)) await snapshot.query(setting);
      await this.repository.declareAudience(
        snapshot.manager,
        'audience',
        compiled,
        resumeFrom,
        startedAt,
      );
      let counted = campaign.recipientCount !== null;
      // The next batch is read from the snapshot while this one is written (two connections).
      let size = FIRST_FANOUT_BATCH;
      const fetch = (count: number) => {
        const rows = this.repository.fetchAudience(snapshot.manager, 'audience', count);
        rows.catch(() => undefined); // awaited below; an early return leaves it to the rollback
        return { rows, count };
      };
      let next = fetch(size);
      const feeding = new Background(feed, this.logger);
      let first = true;
      try {
        for (;;) {
          if (this.shutdown.stopping) return 'handed-back';
          if (await paused()) return 'paused';
          const batch = await next.rows;
          const done = batch.length < next.count;
          if (!done) {
            size = Math.min(size * 2, FANOUT_BATCH);
            next = fetch(size);
          }
          const kept = await this.dataSource.transaction(async (m) => {
            const cursor = batch.length > 0 ? batch[batch.length - 1].id : null;
            if (!(await this.repository.advanceFanout(m, campaign.id, cursor, done))) return false;
            await this.emails.insertBulk(
              m,
              spec,
              batch.map((c) => ({ contactId: c.id, email: c.email })),
            );
            if (done) await this.repository.settleRecipientCount(m, campaign.id);
            return true;
          });
          if (!kept) return 'stopped';
          // Delivery is fed beside the fan-out, not between its batches, except after the first: the
          // first messages get under way before bigger batches compete with them for the event loop.
          if (first) {
            await feed.topUp(false, 1);
            await this.firstMessage(campaign.id);
          } else feeding.poke();
          first = false;
          if (!counted && !done) {
            // After the first batch is on its way: the audience size, in the fan-out's own snapshot.
            const rest = await this.repository.countAudience(
              snapshot.manager,
              compiled,
              resumeFrom,
              startedAt,
            );
            const earlier = before ? total(before) : 0;
            await this.repository.update(manager, campaign.id, { recipientCount: earlier + rest });
            counted = true;
          }
          if (done) return 'done';
        }
      } finally {
        await feeding.settle();
      }
    } finally {
      if (snapshot.isTransactionActive) await snapshot.rollbackTransaction().catch(() => undefined);
      await snapshot.release();
    }
  }

  /** Waits until one of the campaign's messages got an answer from SMTP (or was suppressed), or FIRST_MESSAGE_WAIT_MS. */
  private async firstMessage(campaignId: string): Promise<void> {
    const until = Date.now() + FIRST_MESSAGE_WAIT_MS;
    while (Date.now() < until) {
      const c = await this.repository.counts(this.dataSource.manager, campaignId);
      if (c.sent + c.failed + c.bounced + c.suppressed + c.cancelled + c.complained > 0) return;
      await sleep(FIRST_MESSAGE_POLL_MS);
    }
  }
}

function total(c: {
  queued: number;
  sending: number;
  sent: number;
  failed: number;
  bounced: number;
  suppressed: number;
  cancelled: number;
  complained: number;
}): number {
  return (
    c.queued + c.sending + c.sent + c.failed + c.bounced + c.suppressed + c.cancelled + c.complained
  );
}

/** The campaign backlog kept at `ratePerSecond`: a second's worth, between FEED_LOW_WATER and FEED_HIGH_WATER. */
export function feedHighWater(ratePerSecond: number): number {
  return Math.min(FEED_HIGH_WATER, Math.max(FEED_LOW_WATER, ratePerSecond));
}

/**
 * A campaign's share of the backlog: `highWater` divided equally between the
 * projects sending a campaign, and the project's part between its campaigns.
 */
export function feedShare(
  highWater: number,
  load: { projects: number; ofProject: number },
): number {
  const projects = Math.max(1, load.projects);
  const campaigns = Math.max(1, load.ofProject);
  return Math.max(1, Math.floor(highWater / projects / campaigns));
}

/**
 * Hands a campaign's QUEUED emails to delivery in contact order, keeping at
 * most about its share of the backlog waiting. Its position lives in memory:
 * a new RUN job starts over, which re-adds nothing (job id = email id).
 *
 * The jobs waiting are counted without reading Redis (where another
 * campaign's jobs are not told apart): the emails handed over since the feed
 * started, less those that left QUEUED since then (the campaign's counters).
 * A handed email back in QUEUED for a retry counts as waiting, so a campaign
 * whose mail keeps failing adds no more.
 */
class Feed {
  private cursor: string | null = null;
  /** When a final feed found nothing more (0: not yet). */
  private exhaustedAt = 0;
  private chunk = FIRST_FEED_CHUNK;
  /** Emails handed over since the cursor was last reset. */
  private handed = 0;
  /** The campaign's emails out of QUEUED when the cursor was last reset (null: read it at the next top-up). */
  private leftBefore: number | null = null;

  constructor(
    private readonly emails: EmailsService,
    private readonly repository: CampaignsRepository,
    private readonly manager: EntityManager,
    private readonly campaign: Pick<Campaign, 'id' | 'projectId'>,
    private readonly highWater: number,
  ) {}

  /** The last final top-up reached the end: every QUEUED record has its delivery job. */
  get exhausted(): boolean {
    return this.exhaustedAt > 0;
  }

  /**
   * `final`: every record exists, so reaching the end means everything was
   * handed over. `chunks`: at most this many chunks this time (the first
   * top-up adds one, so the first messages' jobs are not followed at once
   * by hundreds more for the event loop to add).
   */
  async topUp(final: boolean, chunks = Infinity): Promise<void> {
    if (this.exhaustedAt > 0) {
      // Emails still QUEUED after that (a job lost with Redis) are looked for again now and then.
      if (Date.now() - this.exhaustedAt < REFEED_EVERY_MS) return;
      this.cursor = null;
      this.exhaustedAt = 0;
      this.handed = 0;
      this.leftBefore = null;
    }
    const [share, left] = await Promise.all([
      this.repository
        .sendingLoad(this.manager, this.campaign.projectId)
        .then((load) => feedShare(this.highWater, load)),
      this.leftQueued(),
    ]);
    this.leftBefore ??= left;
    let waiting = Math.max(0, this.handed - (left - this.leftBefore));
    for (let added = 0; waiting < share && added < chunks; added++) {
      const chunk = Math.min(this.chunk, share - waiting);
      this.chunk = Math.min(this.chunk * 2, FEED_CHUNK);
      const batch = await this.emails.enqueueOpenOfCampaign(this.campaign.id, this.cursor, chunk);
      waiting += batch.count;
      this.handed += batch.count;
      if (batch.lastContactId) this.cursor = batch.lastContactId;
      if (batch.count < chunk) {
        if (final) this.exhaustedAt = Date.now();
        return;
      }
    }
  }

  /** The campaign's emails no longer QUEUED (handed to SMTP, ended, or cancelled). */
  private async leftQueued(): Promise<number> {
    const c = await this.repository.counts(this.manager, this.campaign.id);
    return c.sending + c.sent + c.failed + c.bounced + c.suppressed + c.cancelled + c.complained;
  }
}

/**
 * Tops up the feed beside the fan-out: a poke starts a top-up unless one is
 * running, in which case one more follows it. A failed top-up is logged and
 * left to the next (the feed is idempotent: job id = email id).
 */
class Background {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly feed: Feed,
    private readonly logger: Logger,
  ) {}

  poke(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop();
  }

  /** Waits for the top-up in flight, if any. */
  async settle(): Promise<void> {
    this.again = false;
    await this.running;
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.feed
          .topUp(false)
          .catch((error: unknown) => this.logger.warn(`campaign feed: ${String(error)}`));
      } while (this.again);
    } finally {
      this.running = null;
    }
  }
}

function handBack(): RunOutcome {
  return { notDueUntil: new Date(Date.now() + HAND_BACK_MS) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
