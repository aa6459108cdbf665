import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { SuppressionReason } from '../contacts/contact.entity';
import { ContactsService } from '../contacts/contacts.service';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { SYSTEM_EVENTS } from '../events/event-names';
import type { RecordedEvent } from '../events/event-hooks';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { EmailStatus, type EmailBounce } from '../sending/email.entity';
import { BouncedEmail, EmailsRepository } from '../sending/emails.repository';
import type { BounceReport } from './bounce-report';
import { BounceReportsRepository } from './bounce-reports.repository';

export type BounceOutcome = 'applied' | 'duplicate' | 'unmatched' | 'ignored';

/** Soft bounces suppress a contact once this many of its last SOFT_WINDOW emails soft-bounced. */
export const SOFT_LIMIT = 3;
export const SOFT_WINDOW = 5;

/** What one report did, for the work after its transaction commits. */
export interface AppliedReport {
  outcome: BounceOutcome;
  kind: BounceReport['kind'];
  /** The email's project when matched. */
  projectId: string | null;
  /** Events recorded in the transaction, to publish after commit. */
  events: RecordedEvent[];
}

/** What the delivery's own 5xx writes with its BOUNCED status (the row is SENDING). */
export interface DeliveryBounceFields {
  error?: string;
  subject?: string;
}

/**
 * The one bounce and complaint policy (contract: "Bounces and complaints"):
 * every source (the listener's parsers, provider webhooks, POST /bounces,
 * delivery's synchronous 5xx) hands it a BounceReport. The report is stored
 * and its effects applied in one transaction, so a report is applied once:
 * its dedupe key is unique, and a repeat inserts nothing and changes nothing.
 * Statuses only move forward (SENT → BOUNCED → COMPLAINED): each update
 * names the statuses it may start from.
 */
@Injectable()
export class BouncePolicy {
  private readonly afterCommitHooks: Array<(applied: AppliedReport) => Promise<void>> = [];

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly reports: BounceReportsRepository,
    private readonly emails: EmailsRepository,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
  ) {}

  async apply(report: BounceReport): Promise<BounceOutcome> {
    const applied = await retryOnDeadlock(() =>
      this.dataSource.transaction((manager) => this.applyWithin(manager, report)),
    );
    await this.afterCommit(applied);
    return applied.outcome;
  }

  /** Work that follows a committed report (sender health); called by afterCommit. */
  onApplied(hook: (applied: AppliedReport) => Promise<void>): void {
    this.afterCommitHooks.push(hook);
  }

  /**
   * The report and its effects in the caller's transaction (delivery's 5xx
   * writes its own fields with them); call afterCommit once it commits.
   */
  async applyWithin(
    manager: EntityManager,
    report: BounceReport,
    delivery: DeliveryBounceFields = {},
  ): Promise<AppliedReport> {
    const email = report.emailId ? await this.emails.findForBounce(manager, report.emailId) : null;
    const matched =
      email && (report.projectId === null || report.projectId === email.projectId) ? email : null;
    const id = await this.reports.insert(
      manager,
      report,
      matched?.id ?? null,
      matched?.projectId ?? report.projectId,
    );
    const none = (outcome: BounceOutcome): AppliedReport => ({
      outcome,
      kind: report.kind,
      projectId: matched?.projectId ?? null,
      events: [],
    });
    if (id === null) return none('duplicate');
    if (!matched) return none('unmatched');
    const events = await this.effects(manager, report, matched, delivery);
    if (events === null) {
      await this.reports.setOutcome(manager, id, 'ignored');
      return none('ignored');
    }
    return { outcome: 'applied', kind: report.kind, projectId: matched.projectId, events };
  }

  async afterCommit(applied: AppliedReport): Promise<void> {
    if (applied.events.length > 0) await this.events.publish(applied.events);
    if (applied.outcome !== 'applied') return;
    for (const hook of this.afterCommitHooks) await hook(applied);
  }

  /** The events recorded, or null when the email's status allowed no effect (kept as `ignored`). */
  private async effects(
    manager: EntityManager,
    report: BounceReport,
    email: BouncedEmail,
    delivery: DeliveryBounceFields,
  ): Promise<RecordedEvent[] | null> {
    const bounce = (type: 'hard' | 'soft'): EmailBounce => ({
      type,
      status: report.status,
      diagnostic: report.diagnostic,
      source: report.source,
    });
    const recorded: EventRow[] = [];
    const record = async (name: string, data: Record<string, unknown>) => {
      recorded.push(
        await this.events.record(manager, {
          projectId: email.projectId,
          contactId: email.contactId,
          emailId: email.id,
          name,
          data,
        }),
      );
    };
    switch (report.kind) {
      case 'hard': {
        const row = await this.emails.markHardBounced(manager, email.id, bounce('hard'), delivery);
        if (!row) return null;
        await this.contacts.suppress(
          manager,
          email.projectId,
          email.contactId,
          SuppressionReason.BOUNCE,
        );
        await record(SYSTEM_EVENTS.EMAIL_BOUNCED, { ...bounce('hard') });
        break;
      }
      case 'complaint': {
        const row = await this.emails.markComplained(manager, email.id);
        if (!row) return null;
        await record(SYSTEM_EVENTS.EMAIL_COMPLAINED, {
          feedbackType: report.feedbackType,
          source: report.source,
        });
        const unsubscribed = await this.contacts.unsubscribe(
          manager,
          email.projectId,
          email.contactId,
          { emailId: email.id, data: { reason: 'complaint', source: report.source } },
        );
        if (unsubscribed.event) recorded.push(unsubscribed.event);
        await this.contacts.suppress(
          manager,
          email.projectId,
          email.contactId,
          SuppressionReason.COMPLAINT,
        );
        break;
      }
      case 'soft': {
        const row = await this.emails.markSoftBounced(manager, email.id, bounce('soft'));
        if (!row) return null;
        await record(SYSTEM_EVENTS.EMAIL_BOUNCED, { ...bounce('soft') });
        const soft = await this.emails.softBouncesOfLast(manager, email.contactId, SOFT_WINDOW);
        if (soft >= SOFT_LIMIT)
          await this.contacts.suppress(
            manager,
            email.projectId,
            email.contactId,
            SuppressionReason.BOUNCE,
          );
        break;
      }
      case 'delayed': {
        if (email.status !== EmailStatus.SENDING && email.status !== EmailStatus.SENT) return null;
        await record(SYSTEM_EVENTS.EMAIL_DELAYED, {
          status: report.status,
          diagnostic: report.diagnostic,
        });
        break;
      }
    }
    return recorded.map((event) => ({ ...event, email: email.toEmail }));
  }
}
