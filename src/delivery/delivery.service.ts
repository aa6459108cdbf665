import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { BouncePolicy } from '../bounces/bounce-policy';
import type { BounceReport } from '../bounces/bounce-report';
import { senderDomainOf } from '../domains/domain-name';
import { DomainsService, SenderDomain } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import type { EventRow } from '../events/event.row';
import { EmailStatus } from '../sending/email.entity';
import { ClaimedEmail, EmailsRepository, FinishFields } from '../sending/emails.repository';
import { classifyFailure, describeFailure, MailTransport } from './mail-transport';
import { TrackingLinks } from '../engagement/tracking-links';
import { linkBaseUrl } from '../common/http/link-base';
import { ReturnPaths } from '../sending/return-paths';
import { UnsubscribeLinks } from '../sending/unsubscribe-links';
import { TemplateRenderError } from '../templates/template-renderer';
import { WeightedSemaphore } from '../common/concurrency/weighted-semaphore';
import { TemplatesService } from '../templates/templates.service';
import { EmailContentsRepository, StoredContent } from '../sending/email-contents.repository';
import { AppMetrics, METRICS_REGISTRY } from '../common/metrics/metrics';
import type { Paused } from '../queue/parked-jobs';
import type { ProviderGroup } from '../config/config';
import { DeliveryPacer, PaceReservation } from './delivery-pacer';
import { isDeferral } from './pacing';
import { ProviderGroups } from './provider-groups';

/** The message as it goes on the wire (before tracking is added to the HTML). */
interface OutgoingContent {
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
  /** Set when rendered here: written to the row with its final status. */
  renderedSubject?: string;
}

/**
 * Characters of message bodies (their sources) a worker process renders and sends at once: four
 * 1 MB bodies, or the 10 jobs in flight (DELIVERY_CONCURRENCY) with bodies up to 400 KB each.
 */
const BODY_CHARS_IN_FLIGHT = 4_000_000;

function contentChars(content: StoredContent): number {
  return content.subject.length + content.body.length;
}

/** Shared contents kept per worker (they never change once written). */
const CONTENT_CACHE_SIZE = 64;
/**
 * Characters of subject and body those contents hold together: 64 campaigns with 1 MB bodies
 * took 64 MB of the main thread's heap (bench:noisy-neighbour, memory part); a content larger
 * than a quarter of it is read for each message instead (one row by key).
 */
const CONTENT_CACHE_CHARS = 8_000_000;

export type DeliveryOutcome = 'sent' | 'bounced' | 'failed' | 'suppressed' | 'skipped';

/** Thrown for a transient failure that has attempts left: BullMQ retries the job with backoff. */
export class TransientDeliveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransientDeliveryError';
  }
}

/**
 * How long the SENT write of an accepted message keeps trying. It must outlast a PgBouncer or
 * primary restart (several seconds on a busy host): a write given up leaves the row SENDING until
 * the 5-minute recovery, which sends the message again.
 */
const MARK_SENT_WITHIN_MS = 20_000;

/**
 * Marketing mail held while its project's sender health or its campaign is
 * PAUSED: the job goes back to the queue for this long, no attempt counted.
 */
export const HOLD_MS = 15_000;

/** The email may not go yet (held marketing mail): its job waits until then. */
export interface Held {
  heldUntil: number;
}

/**
 * The email waits for its provider group's pace (its slot is further away
 * than PACE_SLACK_MS, or the group deferred it): the claim was given back and
 * the job waits, delayed, until `pace.slot`, no attempt counted.
 */
export interface Paced {
  pace: PaceReservation;
}

/** A slot this close is waited for in the worker; a later one hands the job back to the queue. */
export const PACE_SLACK_MS = 20;

/**
 * For this long after an email was accepted its deferrals count no attempt
 * (the receiver asked us to slow down, not to give up); later each deferral
 * uses one, so a recipient that defers for ever ends FAILED.
 */
export const DEFERRAL_GRACE_MS = 24 * 3_600_000;

/** The message cannot be built (its shared content is gone or does not render for this contact): FAILED, no retry. */
class ContentError extends Error {}

/**
 * The sending state machine: QUEUED → SENDING → SENT | BOUNCED | FAILED, or
 * SUPPRESSED without an attempt. Every transition is a conditional UPDATE on
 * the row's current status, so a repeated or concurrent job for the same
 * email finds nothing to do once a final status is written.
 *
 * A retry never re-sends an accepted message: the row is marked SENT right
 * after the server's 250, before anything else. The only gap is a crash
 * between that 250 and the UPDATE (milliseconds); the stalled job then runs
 * again and the message goes out twice. At most `concurrency` messages per
 * crashed worker can be in that gap.
 */
@Injectable()
export class DeliveryService {
  private readonly logger = new Logger(DeliveryService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: EmailsRepository,
    private readonly emailContents: EmailContentsRepository,
    private readonly transport: MailTransport,
    private readonly domains: DomainsService,
    private readonly events: EventsService,
    private readonly bounces: BouncePolicy,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly trackingLinks: TrackingLinks,
    private readonly templates: TemplatesService,
    private readonly unsubscribeLinks: UnsubscribeLinks,
    @Inject(METRICS_REGISTRY) private readonly metrics: AppMetrics,
    private readonly returnPaths: ReturnPaths,
    private readonly groups: ProviderGroups,
    private readonly pacer: DeliveryPacer,
  ) {}

  private readonly contents = new Map<string, StoredContent>();
  private contentChars = 0;
  private readonly bodiesInFlight = new WeightedSemaphore(BODY_CHARS_IN_FLIGHT);

  /**
   * `pausedFor`: the email's project is disabled; the row was not touched (the processor parks the job).
   * `pace`: it waits for its provider group's slot. `held`: the slot this job reserved before.
   */
  async deliver(
    emailId: string,
    lastJobAttempt: boolean,
    held: PaceReservation | null = null,
  ): Promise<DeliveryOutcome | Paused | Held | Paced> {
    const email = await this.repository.claim(this.dataSource.manager, emailId);
    if (!email) {
      // Rare (a repeated job, a disabled project, held marketing mail): only then the second look.
      const why = await this.repository.whyNotClaimed(this.dataSource.manager, emailId);
      if (!why) return 'skipped';
      return why.disabled ? { pausedFor: why.projectId } : { heldUntil: Date.now() + HOLD_MS };
    }
    // The row counts attempts across jobs: a job re-added by the recovery does not get a fresh budget.
    const lastAttempt = lastJobAttempt || email.attempts >= this.config.deliveryAttempts;
    if (email.status === EmailStatus.SUPPRESSED) {
      await this.emailContents.releaseAttachments(this.dataSource.manager, email.attachments);
      return 'suppressed';
    }

    // Only mail that leaves by SMTP is paced: the outbox has no provider at the other end.
    const group = this.transport.kind === 'smtp' ? await this.groups.groupOf(email.toEmail) : null;
    if (group !== null && (await this.pacer.binds(group))) {
      const pace = await this.pacer.reserve(group, held);
      const wait = pace.slot - Date.now();
      if (wait > PACE_SLACK_MS) {
        await this.repository.releaseClaim(this.dataSource.manager, email.id, null, true);
        return { pace };
      }
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }

    let sender: SenderDomain | null;
    try {
      // The claim read the sender's domain row just now (no round trip of its own, still uncached).
      sender = await this.domains.assertCanSend(
        email.projectId,
        email.fromEmail,
        undefined,
        email.sender,
      );
    } catch (error) {
      if (!(error instanceof ApiException)) throw error;
      await this.finishFailed(email, `sender domain is not verified: ${error.message}`);
      return 'failed';
    }

    // A message holds its body a few times over from render to sent (rendered, tracked, MIME):
    // 10 jobs in flight with 1 MB bodies took more memory than the worker's heap cap. Bodies in
    // flight are bounded in characters instead; ordinary messages (tens of KB) never wait.
    return this.bodiesInFlight.run(await this.bodyChars(email), () =>
      this.renderAndSend(email, sender, group, lastAttempt),
    );
  }

  /** The message built (rendered if from shared content), sent and its row finished. */
  private async renderAndSend(
    email: ClaimedEmail,
    sender: SenderDomain | null,
    group: ProviderGroup | null,
    lastAttempt: boolean,
  ): Promise<DeliveryOutcome | Paced> {
    let content: OutgoingContent;
    try {
      content = await this.contentOf(email);
    } catch (error) {
      if (!(error instanceof ContentError)) throw error;
      // Not retried and not the recipient's doing: an operator has to see it to fix the template or data.
      this.logger.error(
        { emailId: email.id, projectId: email.projectId, error: error.message },
        'email FAILED: its content could not be built',
      );
      await this.finishFailed(email, error.message);
      return 'failed';
    }

    // Unsigned (sender null) only where REQUIRE_VERIFIED_SENDER is off: the outbox default.
    const messageId = `${email.id}@${sender?.domain ?? senderDomainOf(email.fromEmail)}`;
    // The claim's domain read carries the RETURN_PATH record's status: no query of its own.
    const { returnPath, envelopeId } = this.returnPaths.envelope(
      email.id,
      sender?.returnPathDomain ?? null,
    );
    // When the attempt left: a deferral of mail sent before the group last slowed down is no new signal.
    const sentAt = Date.now();
    try {
      // Pixel and tracked links are added here, never stored (tracking-links.ts). The rendered HTML
      // is garbage once tracked: a message in flight then holds one copy of its body, not two (ten
      // in flight with 1 MB bodies, bench:noisy-neighbour's memory part).
      const html = this.trackingLinks.deliveredHtml({
        ...email,
        html: content.html,
        linkBase: this.linkBase(email),
      });
      content.html = '';
      const contents = await this.emailContents.attachmentContents(
        this.dataSource.manager,
        email.attachments.map((a) => a.id),
      );
      await this.transport.send({
        messageId,
        from: { email: email.fromEmail, name: email.fromName },
        to: { email: email.toEmail, name: email.toName },
        replyTo: email.replyTo,
        subject: content.subject,
        html,
        text: content.text,
        headers: this.unsubscribeLinks.withMailto(
          content.headers,
          this.returnPaths.unsubscribeAddress(email.id, returnPath),
        ),
        attachments: email.attachments.map((a) => ({
          filename: a.filename,
          contentType: a.contentType,
          content: contents.get(a.id) ?? Buffer.alloc(0),
        })),
        dkim: sender?.dkim ?? null,
        returnPath,
        envelopeId,
      });
    } catch (error) {
      const description = describeFailure(error);
      if (classifyFailure(error) === 'permanent') {
        await this.finishBounced(email, error, description, content.renderedSubject, returnPath);
        return 'bounced';
      }
      if (group !== null && isDeferral(error)) {
        const paced = await this.deferred(email, group, sentAt, description, lastAttempt);
        if (paced) return paced;
        await this.finishFailed(email, description, content.renderedSubject, returnPath);
        return 'failed';
      }
      if (lastAttempt) {
        await this.finishFailed(email, description, content.renderedSubject, returnPath);
        return 'failed';
      }
      await this.repository.requeue(this.dataSource.manager, email.id, description);
      this.metrics.smtpErrors.inc({ class: 'transient' });
      throw new TransientDeliveryError(description);
    }

    await this.finishSent(
      email,
      `<${messageId}>`,
      sender !== null,
      returnPath,
      content.renderedSubject,
    );
    return 'sent';
  }

  /**
   * The group deferred this message: the group slows down (DeliveryPacer) and
   * the message retries at the group's pace, not on the exponential backoff.
   * Null when the deferral used the email's last attempt (past
   * DEFERRAL_GRACE_MS): the caller fails it.
   */
  private async deferred(
    email: ClaimedEmail,
    group: ProviderGroup,
    sentAt: number,
    description: string,
    lastAttempt: boolean,
  ): Promise<Paced | null> {
    const signal = await this.pacer.deferred(group, sentAt);
    this.metrics.deliveryDeferrals.inc({ group });
    this.metrics.smtpErrors.inc({ class: 'transient' });
    if (signal.halved)
      this.logger.warn(
        { group, rate: signal.rate, error: description },
        'a mailbox provider deferred mail: its group slows down',
      );
    const refund = Date.now() - new Date(email.queuedAt).getTime() < DEFERRAL_GRACE_MS;
    if (!refund && lastAttempt) return null;
    await this.repository.releaseClaim(this.dataSource.manager, email.id, description, refund);
    return { pace: signal.reservation };
  }

  /** The size of a message's body before it is built: what it weighs in bodiesInFlight. */
  private async bodyChars(email: ClaimedEmail): Promise<number> {
    if (email.contentId === null) return (email.html?.length ?? 0) + (email.text?.length ?? 0);
    try {
      return contentChars(await this.sharedContent(email.contentId));
    } catch (error) {
      // Missing content: contentOf fails the message, which weighs nothing meanwhile.
      if (error instanceof ContentError) return 0;
      throw error;
    }
  }

  /**
   * The stored rendered message, or, for mail from shared content (a
   * campaign), the content rendered now for the contact as it is now, with
   * its unsubscribe link. Marketing mail gets its List-Unsubscribe headers
   * here when the row does not carry them.
   */
  private async contentOf(email: ClaimedEmail): Promise<OutgoingContent> {
    if (email.contentId === null) {
      return {
        subject: email.subject,
        html: email.html ?? '',
        text: email.text ?? '',
        headers: email.headers,
      };
    }
    const content = await this.sharedContent(email.contentId);
    const unsubscribeUrl = this.unsubscribeLinks.url(
      email.projectId,
      email.contactId,
      email.id,
      this.linkBase(email),
    );
    let rendered;
    try {
      rendered = await this.templates.render(
        email.projectId,
        content,
        {
          id: email.contactId,
          email: email.toEmail,
          subscribed: email.contactSubscribed,
          data: email.contactData ?? {},
        },
        null,
        unsubscribeUrl,
      );
    } catch (error) {
      if (error instanceof TemplateRenderError)
        throw new ContentError(`could not render the message: ${error.message}`);
      throw error;
    }
    const headers =
      email.marketing && !email.headers['List-Unsubscribe']
        ? { ...email.headers, ...this.unsubscribeLinks.headers(unsubscribeUrl) }
        : email.headers;
    return {
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
      headers,
      renderedSubject: rendered.subject,
    };
  }

  /**
   * The origin of the links this delivery writes: the project's tracking
   * domain as the claim read it (VERIFIED only), else PUBLIC_URL. Links
   * stored at compose keep the host they were rendered with.
   */
  private linkBase(email: ClaimedEmail): string {
    return linkBaseUrl(this.config.publicUrl, email.trackingDomain);
  }

  private async sharedContent(id: string): Promise<StoredContent> {
    const cached = this.contents.get(id);
    if (cached) return cached;
    const content = await this.emailContents.findContent(this.dataSource.manager, id);
    if (!content) throw new ContentError(`content ${id} is missing`);
    const chars = contentChars(content);
    if (chars > CONTENT_CACHE_CHARS / 4) return content;
    for (const [oldest, held] of this.contents) {
      if (
        this.contents.size < CONTENT_CACHE_SIZE &&
        this.contentChars + chars <= CONTENT_CACHE_CHARS
      )
        break;
      this.contents.delete(oldest);
      this.contentChars -= contentChars(held);
    }
    this.contents.set(id, content);
    this.contentChars += chars;
    return content;
  }

  /** The job is gone for good (stalled too often, unexpected errors): the row must not stay open. */
  async failLost(emailId: string, reason: string): Promise<void> {
    const recorded = await this.dataSource.transaction(async (manager) => {
      const row = await this.repository.failIfOpen(manager, emailId, reason);
      if (!row) return null;
      await this.emailContents.releaseAttachments(manager, row.attachments);
      const event = await this.events.record(manager, {
        projectId: row.projectId,
        contactId: row.contactId,
        emailId,
        name: 'email.failed',
        data: { error: reason },
      });
      return { event, toEmail: row.toEmail };
    });
    if (recorded) await this.events.publish([{ ...recorded.event, email: recorded.toEmail }]);
  }

  /**
   * The server accepted the message: this write must land, or a retry would
   * send it again. Tries for MARK_SENT_WITHIN_MS, backing off to 1 s between tries.
   */
  private async finishSent(
    email: ClaimedEmail,
    messageId: string,
    dkimSigned: boolean,
    returnPath: string,
    subject?: string,
  ): Promise<void> {
    const giveUpAt = Date.now() + MARK_SENT_WITHIN_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.finish(
          email,
          EmailStatus.SENT,
          { messageId, error: null, dkimSigned, subject, returnPath },
          'email.sent',
          { messageId },
        );
        return;
      } catch (error) {
        if (Date.now() >= giveUpAt) throw error;
        this.logger.warn(
          { err: error, emailId: email.id },
          'could not record an accepted message yet; retrying',
        );
        await new Promise((r) => setTimeout(r, Math.min(200 * attempt, 1_000)));
      }
    }
  }

  /** A 5xx during the SMTP session: a hard bounce, through the one bounce policy (source `smtp`). */
  private async finishBounced(
    email: ClaimedEmail,
    failure: unknown,
    error: string,
    subject: string | undefined,
    returnPath: string,
  ): Promise<void> {
    const report: BounceReport = {
      kind: 'hard',
      source: 'smtp',
      emailId: email.id,
      recipient: email.toEmail,
      status: smtpStatusOf(failure),
      diagnostic: error,
      feedbackType: null,
      // One synchronous bounce per email: its final attempt.
      dedupeKey: `smtp-${email.id}`,
      projectId: email.projectId,
    };
    const applied = await this.dataSource.transaction(async (manager) => {
      const result = await this.bounces.applyWithin(manager, report, {
        error,
        subject,
        returnPath,
      });
      if (result.outcome === 'applied')
        await this.emailContents.releaseAttachments(manager, email.attachments);
      return result;
    });
    await this.bounces.afterCommit(applied);
  }

  /** `returnPath`: the envelope sender of the attempt that failed; none when nothing was attempted. */
  private async finishFailed(
    email: ClaimedEmail,
    error: string,
    subject?: string,
    returnPath?: string,
  ): Promise<void> {
    await this.finish(email, EmailStatus.FAILED, { error, subject, returnPath }, 'email.failed', {
      error,
    });
  }

  private async finish(
    email: ClaimedEmail,
    status: EmailStatus.SENT | EmailStatus.FAILED,
    fields: FinishFields,
    eventName: string,
    eventData: Record<string, unknown>,
  ): Promise<void> {
    const record = {
      projectId: email.projectId,
      contactId: email.contactId,
      emailId: email.id,
      name: eventName,
      data: eventData,
    };
    // Nothing else to write (the common case): the status and its event in one statement, one round trip.
    const event =
      email.attachments.length === 0
        ? await this.repository.finishRecording(
            this.dataSource.manager,
            email.id,
            status,
            fields,
            record,
          )
        : await this.dataSource.transaction(async (manager): Promise<EventRow | null> => {
            if (!(await this.repository.finish(manager, email.id, status, fields))) return null;
            await this.emailContents.releaseAttachments(manager, email.attachments);
            return this.events.record(manager, record);
          });
    if (event) await this.events.publish([{ ...event, email: email.toEmail }]);
  }
}

/** The enhanced status code (5.1.1) of an SMTP refusal, else its reply code, else null. */
function smtpStatusOf(error: unknown): string | null {
  const e = error as { responseCode?: unknown; response?: unknown };
  const enhanced =
    typeof e?.response === 'string' ? /\b[245]\.\d{1,3}\.\d{1,3}\b/.exec(e.response) : null;
  if (enhanced) return enhanced[0];
  return typeof e?.responseCode === 'number' ? String(e.responseCode) : null;
}
