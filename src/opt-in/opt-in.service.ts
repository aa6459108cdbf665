import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import type { ContactRow } from '../contacts/contact.row';
import { ContactsService } from '../contacts/contacts.service';
import type { EventRow } from '../events/event.row';
import { SYSTEM_EVENTS } from '../events/event-names';
import { EventsService } from '../events/events.service';
import type { NewEvent } from '../events/events.repository';
import { OptInSettings, ProjectsService } from '../projects/projects.service';
import { ConfirmationMail } from './confirmation-mail';
import type { SubscribeDto } from './dto/subscribe.dto';
import type { SubscribeResponse, SubscribeStatus } from './dto/subscribe.response';
import { OptInRepository } from './opt-in.repository';

/** A second request for the same address within this time sends no second confirmation. */
export const CONFIRMATION_QUIET_SECONDS = 600;

/** What GET /confirm/{token} shows (or where it redirects). */
export interface ConfirmationPage {
  email: string;
  projectName: string;
  redirectUrl: string | null;
}

/**
 * POST /v1/subscribe and GET /confirm/{token}. With double opt-in, a contact
 * is subscribed only by following the link of its confirmation email. Without
 * it, a secret key subscribes at once; a public key subscribes new contacts at
 * once but never resubscribes one who unsubscribed or is suppressed (the
 * contract's pk_ rule): that contact is sent a confirmation, as with double opt-in.
 */
@Injectable()
export class OptInService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsService,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
    private readonly confirmations: OptInRepository,
    private readonly mail: ConfirmationMail,
  ) {}

  async subscribe(
    projectId: string,
    dto: SubscribeDto,
    viaPublicKey: boolean,
  ): Promise<SubscribeResponse> {
    const settings = await this.projects.optInSettings(projectId);
    if (!settings) throw new Error(`project ${projectId} of an authenticated key is missing`);
    const subscribeNow = !settings.enabled && !viaPublicKey;
    const outcome = await this.dataSource.transaction(async (manager) => {
      const upsert = await this.contacts.upsertByEmail(manager, projectId, dto.email, {
        subscribed: subscribeNow ? true : undefined,
        defaultSubscribed: !settings.enabled,
        data: dto.data,
      });
      const contact = upsert.contact;
      const events: EventRow[] = upsert.subscriptionChanged
        ? [await this.events.record(manager, subscribedEvent(contact, 'subscribe'))]
        : [];
      if (contact.subscribed) {
        return { contact, events, status: 'subscribed' as SubscribeStatus, claimed: null };
      }
      // The contact row is locked until commit and the claim is one statement: one email per window.
      const claimed = await this.confirmations.claimSend(
        manager,
        projectId,
        contact.id,
        CONFIRMATION_QUIET_SECONDS,
      );
      return { contact, events, status: 'pending' as SubscribeStatus, claimed };
    });
    await this.events.publish(
      outcome.events.map((event) => ({ ...event, email: outcome.contact.email })),
    );
    if (outcome.claimed) await this.mail.send(settings, outcome.contact, outcome.claimed);
    return { contact: outcome.contact.id, status: outcome.status };
  }

  /**
   * Follows a confirmation link: the first use subscribes the contact and
   * records `contact.confirmed` then `contact.subscribed`; a used link shows
   * the same page and records nothing. Forged, expired or erased: 404.
   */
  async confirm(token: string): Promise<ConfirmationPage> {
    const target = this.mail.tokenVerifier.verify(token);
    if (!target) throw linkNotValid();
    const settings = await this.projects.optInSettings(target.projectId);
    if (!settings) throw linkNotValid();
    const outcome = await this.dataSource.transaction(async (manager) => {
      const fresh = await this.confirmations.markConfirmed(
        manager,
        target.projectId,
        target.contactId,
        target.issuedAt,
      );
      const row = await this.contacts.findRow(manager, target.projectId, target.contactId);
      if (!row) return null;
      if (!fresh) return { contact: row, events: [] as EventRow[] };
      const upsert = await this.contacts.upsertByEmail(manager, target.projectId, row.email, {
        subscribed: true,
        defaultSubscribed: true,
      });
      const recorded: NewEvent[] = [
        {
          projectId: target.projectId,
          contactId: row.id,
          name: SYSTEM_EVENTS.CONTACT_CONFIRMED,
          data: { source: 'double-opt-in' },
        },
      ];
      if (upsert.subscriptionChanged) recorded.push(subscribedEvent(row, 'double-opt-in'));
      return { contact: upsert.contact, events: await this.events.recordMany(manager, recorded) };
    });
    if (!outcome) throw linkNotValid();
    await this.events.publish(
      outcome.events.map((event) => ({ ...event, email: outcome.contact.email })),
    );
    return pageOf(outcome.contact, settings);
  }
}

function subscribedEvent(contact: ContactRow, source: string): NewEvent {
  return {
    projectId: contact.projectId,
    contactId: contact.id,
    name: SYSTEM_EVENTS.CONTACT_SUBSCRIBED,
    data: { source },
  };
}

function pageOf(contact: ContactRow, settings: OptInSettings): ConfirmationPage {
  return {
    email: contact.email,
    projectName: settings.name,
    redirectUrl: settings.confirmRedirectUrl,
  };
}

function linkNotValid(): ApiException {
  return new ApiException(404, 'CONTACT_NOT_FOUND', 'This confirmation link is not valid', {
    suggestion: 'Use the link exactly as it appears in the email, within 30 days.',
  });
}
