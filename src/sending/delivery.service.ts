import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ContactsService } from '../contacts/contacts.service';
import { senderDomainOf } from '../domains/domain-name';
import { DomainsService, SenderDomain } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import type { EventRow } from '../events/event.row';
import { EmailStatus } from './email.entity';
import { ClaimedEmail, EmailsRepository, FinishFields } from './emails.repository';
import { classifyFailure, describeFailure, MailTransport } from './mail-transport';
import { TrackingLinks } from './tracking-links';

export type DeliveryOutcome = 'sent' | 'bounced' | 'failed' | 'suppressed' | 'skipped';

/** Thrown for a transient failure that has attempts left: BullMQ retries the job with backoff. */
export class TransientDeliveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransientDeliveryError';
  }
}

const MARK_SENT_TRIES = 5;

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
    private readonly transport: MailTransport,
    private readonly domains: DomainsService,
    private readonly events: EventsService,
    private readonly contacts: ContactsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly trackingLinks: TrackingLinks,
  ) {}

  async deliver(emailId: string, lastJobAttempt: boolean): Promise<DeliveryOutcome> {
    const email = await this.repository.claim(this.dataSource.manager, emailId);
    if (!email) return 'skipped';
    // The row counts attempts across jobs: a job re-added by the recovery does not get a fresh budget.
    const lastAttempt = lastJobAttempt || email.attempts >= this.config.deliveryAttempts;
    if (email.status === EmailStatus.SUPPRESSED) {
      await this.repository.releaseAttachments(this.dataSource.manager, email.attachments);
      return 'suppressed';
    }

    let sender: SenderDomain | null;
    try {
      sender = await this.domains.assertCanSend(email.projectId, email.fromEmail);
    } catch (error) {
      if (!(error instanceof ApiException)) throw error;
      await this.finishFailed(email, `sender domain is not verified: ${error.message}`);
      return 'failed';
    }

    // Unsigned (sender null) only where REQUIRE_VERIFIED_SENDER is off: the outbox default.
    const messageId = `${email.id}@${sender?.domain ?? senderDomainOf(email.fromEmail)}`;
    try {
      const contents = await this.repository.attachmentContents(
        this.dataSource.manager,
        email.attachments.map((a) => a.id),
      );
      await this.transport.send({
        messageId,
        from: { email: email.fromEmail, name: email.fromName },
        to: { email: email.toEmail, name: email.toName },
        replyTo: email.replyTo,
        subject: email.subject,
        // Pixel and tracked links are added here, never stored (tracking-links.ts).
        html: this.trackingLinks.deliveredHtml(email),
        text: email.text,
        headers: email.headers,
        attachments: email.attachments.map((a) => ({
          filename: a.filename,
          contentType: a.contentType,
          content: contents.get(a.id) ?? Buffer.alloc(0),
        })),
        dkim: sender?.dkim ?? null,
      });
    } catch (error) {
      const description = describeFailure(error);
      if (classifyFailure(error) === 'permanent') {
        await this.finishBounced(email, description);
        return 'bounced';
      }
      if (lastAttempt) {
        await this.finishFailed(email, description);
        return 'failed';
      }
      await this.repository.requeue(this.dataSource.manager, email.id, description);
      throw new TransientDeliveryError(description);
    }

    await this.finishSent(email, `<${messageId}>`, sender !== null);
    return 'sent';
  }

  /** The job is gone for good (stalled too often, unexpected errors): the row must not stay open. */
  async failLost(emailId: string, reason: string): Promise<void> {
    const recorded = await this.dataSource.transaction(async (manager) => {
      const row = await this.repository.failIfOpen(manager, emailId, reason);
      if (!row) return null;
      await this.repository.releaseAttachments(manager, row.attachments);
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
   * send it again. A few quick tries ride out a database blip.
   */
  private async finishSent(email: ClaimedEmail, messageId: string, dkimSigned: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.finish(email, EmailStatus.SENT, { messageId, error: null, dkimSigned }, 'email.sent', { messageId });
        return;
      } catch (error) {
        if (attempt >= MARK_SENT_TRIES) throw error;
        this.logger.warn({ err: error, emailId: email.id }, 'could not record an accepted message yet; retrying');
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  }

  private async finishBounced(email: ClaimedEmail, error: string): Promise<void> {
    await this.finish(email, EmailStatus.BOUNCED, { error }, 'email.bounced', { error }, async (manager) => {
      await this.contacts.suppress(manager, email.projectId, email.contactId);
    });
  }

  private async finishFailed(email: ClaimedEmail, error: string): Promise<void> {
    await this.finish(email, EmailStatus.FAILED, { error }, 'email.failed', { error });
  }

  private async finish(
    email: ClaimedEmail,
    status: EmailStatus.SENT | EmailStatus.FAILED | EmailStatus.BOUNCED,
    fields: FinishFields,
    eventName: string,
    eventData: Record<string, unknown>,
    extra?: (manager: EntityManager) => Promise<void>,
  ): Promise<void> {
    const event = await this.dataSource.transaction(async (manager): Promise<EventRow | null> => {
      if (!(await this.repository.finish(manager, email.id, status, fields))) return null;
      await this.repository.releaseAttachments(manager, email.attachments);
      if (extra) await extra(manager);
      return this.events.record(manager, {
        projectId: email.projectId,
        contactId: email.contactId,
        emailId: email.id,
        name: eventName,
        data: eventData,
      });
    });
    if (event) await this.events.publish([{ ...event, email: email.toEmail }]);
  }
}
