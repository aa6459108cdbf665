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
  /** The envelope sender of the attempt that bounced. */
  returnPath?: string;
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
  private readonly afterCommitHooks: Array<(applied: AppliedReport[]) => Promise<void>> = [];

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

  /**
   * Work that follows committed reports (sender health); called by
   * afterCommit and afterCommitMany with the reports applied, once per
   * transaction.
   */
  onApplied(hook: (applied: AppliedReport[]) => Promise<void>): void {
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

  /**
   * applyWithin for the reports of one transaction (an inbound batch), in
   * their order, with the same effects. Hard bounces and unmatched reports
   * that share no email, contact or dedupe key with another report of the
   * batch take a few set-based statements for all of them; every other
   * report (complaints, soft bounces, delays, an email named twice) is
   * applied one by one, in order, after them: they touch none of the same
   * rows, so the outcome is the one the arrival order gives.
   */
  async applyManyWithin(manager: EntityManager, reports: BounceReport[]): Promise<AppliedReport[]> {
    const emailIds = [...new Set(reports.flatMap((r) => (r.emailId ? [r.emailId] : [])))];
    const emails =
      emailIds.length > 0
        ? await this.emails.findManyForBounce(manager, emailIds)
        : new Map<string, BouncedEmail>();
    const matched = reports.map((report) => {
      const email = report.emailId ? emails.get(report.emailId) : undefined;
      return email && (report.projectId === null || report.projectId === email.projectId)
        ? email
        : null;
    });
    const uses = new Map<string, number>();
    const use = (key: string) => uses.set(key, (uses.get(key) ?? 0) + 1);
    reports.forEach((report, i) => {
      use(`key:${report.dedupeKey.slice(0, 500)}`);
      const email = matched[i];
      if (email) {
        use(`email:${email.id}`);
        use(`contact:${email.contactId}`);
      }
    });
    const once = (key: string) => uses.get(key) === 1;
    const together = reports.flatMap((report, i) => {
      const email = matched[i];
      const alone =
        once(`key:${report.dedupeKey.slice(0, 500)}`) &&
        (email === null || (once(`email:${email.id}`) && once(`contact:${email.contactId}`)));
      return alone && (report.kind === 'hard' || email === null) ? [i] : [];
    });
    const results = new Array<AppliedReport | undefined>(reports.length);
    const applied = await this.applyTogether(
      manager,
      together.map((i) => ({ report: reports[i], email: matched[i] })),
    );
    together.forEach((i, j) => (results[i] = applied[j]));
    for (let i = 0; i < reports.length; i++)
      results[i] ??= await this.applyWithin(manager, reports[i]);
    return results as AppliedReport[];
  }

  /** Hard bounces and unmatched reports, each of its own email and contact, in set-based statements. */
  private async applyTogether(
    manager: EntityManager,
    items: Array<{ report: BounceReport; email: BouncedEmail | null }>,
  ): Promise<AppliedReport[]> {
    if (items.length === 0) return [];
    const stored = await this.reports.insertMany(
      manager,
      items.map(({ report, email }) => ({
        report,
        emailId: email?.id ?? null,
        projectId: email?.projectId ?? report.projectId,
      })),
    );
    const hardBounce = (report: BounceReport): EmailBounce => ({
      type: 'hard',
      status: report.status,
      diagnostic: report.diagnostic,
      source: report.source,
    });
    const candidates = items.flatMap((item, i) =>
      item.email && stored.has(i) ? [{ ...item, email: item.email, index: i }] : [],
    );
    const bounced =
      candidates.length > 0
        ? await this.emails.markHardBouncedMany(
            manager,
            candidates.map(({ report, email }) => ({
              emailId: email.id,
              bounce: hardBounce(report),
            })),
          )
        : new Set<string>();
    const effective = candidates.filter(({ email }) => bounced.has(email.id));
    for (const { index } of candidates.filter(({ email }) => !bounced.has(email.id)))
      await this.reports.setOutcome(manager, stored.get(index) as string, 'ignored');
    await this.contacts.suppressMany(
      manager,
      effective.map(({ email }) => ({ projectId: email.projectId, id: email.contactId })),
      SuppressionReason.BOUNCE,
    );
    const events = await this.events.recordMany(
      manager,
      effective.map(({ report, email }) => ({
        projectId: email.projectId,
        contactId: email.contactId,
        emailId: email.id,
        name: SYSTEM_EVENTS.EMAIL_BOUNCED,
        data: { ...hardBounce(report) },
      })),
    );
    const eventOf = new Map(effective.map(({ index }, j) => [index, events[j]]));
    return items.map(({ report, email }, i): AppliedReport => {
      const projectId = email?.projectId ?? null;
      const none = (outcome: BounceOutcome): AppliedReport => ({
        outcome,
        kind: report.kind,
        projectId,
        events: [],
      });
      if (!stored.has(i)) return none('duplicate');
      if (!email) return none('unmatched');
      const event = eventOf.get(i);
      if (!event) return none('ignored');
      return {
        outcome: 'applied',
        kind: report.kind,
        projectId,
        events: [{ ...event, email: email.toEmail }],
      };
    });
  }

  async afterCommit(applied: AppliedReport): Promise<void> {
    await this.afterCommitMany([applied]);
  }

  /** afterCommit for the reports of one transaction (an inbound batch): one publish, one call of each hook. */
  async afterCommitMany(reports: AppliedReport[]): Promise<void> {
    const events = reports.flatMap((report) => report.events);
    if (events.length > 0) await this.events.publish(events);
    const applied = reports.filter((report) => report.outcome === 'applied');
    if (applied.length === 0) return;
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
