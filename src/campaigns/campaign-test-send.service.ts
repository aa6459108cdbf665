import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ContactsService } from '../contacts/contacts.service';
import { DomainsService } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import { PRIORITY } from '../queue/queue.constants';
import { ApiException } from '../common/errors/api-exception';
import { normalizeEmail } from '../common/validation/email';
import type { ContactRow } from '../contacts/contact.row';
import type { UpsertContactOptions } from '../contacts/contacts.service';
import type { EventRow } from '../events/event.row';
import { Email, EmailSource } from '../sending/email.entity';
import { EmailsService } from '../sending/emails.service';
import {
  MAX_RENDER_ATTEMPTS,
  RecipientsChanged,
  rendersAlike,
} from '../sending/rendered-recipients';
import { renderFailure } from '../templates/templates.service';
import { CampaignsService } from './campaigns.service';
import type { CampaignTestResponse } from './dto/campaign-test.response';
import type { TestCampaignDto } from './dto/test-campaign.dto';

/** The test send of a campaign: it sends copies to given addresses and leaves the campaign as it is. */
@Injectable()
export class CampaignTestSendService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly resource: CampaignsService,
    private readonly domains: DomainsService,
    private readonly emails: EmailsService,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
  ) {}

  /**
   * `[TEST] ` + subject, rendered for the contact with that address (created,
   * not subscribed, when there is none: every email record has a contact),
   * sent at transactional priority, not tracked, not marketing (the tester
   * need not be subscribed) and not linked to the campaign: no status or
   * statistic changes.
   */
  async test(projectId: string, id: string, dto: TestCampaignDto): Promise<CampaignTestResponse> {
    const campaign = await this.resource.find(this.dataSource.manager, projectId, id);
    await this.domains.assertCanSend(projectId, campaign.fromEmail);
    const addresses = [...new Set(dto.emails.map(normalizeEmail))].sort();
    const upsert: UpsertContactOptions = { defaultSubscribed: false };
    // Rendered before the transaction, for the contacts as they are (or will be, when created): no
    // connection is held while the render pool works. A contact changed in between is rendered again.
    let expected = await this.contacts.expectedUpserts(
      this.dataSource.manager,
      projectId,
      addresses,
      upsert,
    );
    for (let attempt = 1; ; attempt++) {
      const rendered = await Promise.all(
        addresses.map((address) =>
          this.emails.render({
            projectId,
            contact: expected.get(address) as ContactRow,
            source: EmailSource.CAMPAIGN,
            marketing: false,
            from: { email: campaign.fromEmail, name: campaign.fromName },
            replyTo: campaign.replyTo,
            content: { subject: campaign.subject, body: campaign.body },
            priority: PRIORITY.TRANSACTIONAL,
            trackOpens: false,
            trackClicks: false,
            subjectPrefix: '[TEST] ',
          }),
        ),
      ).catch((error: unknown) => {
        throw renderFailure(error);
      });
      try {
        const composed = await this.dataSource.transaction(async (manager) => {
          const locked = new Map<string, ContactRow>();
          for (const address of addresses) {
            const { contact } = await this.contacts.upsertByEmail(manager, projectId, address, {
              ...upsert,
              idIfNew: expected.get(address)?.id,
            });
            locked.set(address, contact);
          }
          for (const [address, contact] of locked) {
            if (!rendersAlike(contact, expected.get(address))) throw new RecipientsChanged(locked);
          }
          const emails = rendered.map((message, i) =>
            this.emails.toRow(message, locked.get(addresses[i]) as ContactRow),
          );
          const queued = await this.emails.insert(manager, emails);
          return { emails, queued };
        });
        return await this.answer(composed);
      } catch (error) {
        if (!(error instanceof RecipientsChanged)) throw error;
        if (attempt >= MAX_RENDER_ATTEMPTS) {
          throw ApiException.conflict(
            'The test recipients changed while their messages were rendered',
            'Send the test again.',
          );
        }
        expected = error.locked;
      }
    }
  }

  private async answer(composed: {
    emails: Email[];
    queued: EventRow[];
  }): Promise<CampaignTestResponse> {
    await this.emails.enqueue(composed.emails);
    await this.events.publish(
      composed.queued.map((e) => ({
        ...e,
        email: composed.emails.find((m) => m.id === e.emailId)?.toEmail ?? null,
      })),
    );
    return {
      emails: composed.emails.map((e) => ({
        id: e.id,
        to: e.toEmail,
        contact: e.contactId,
        status: e.status,
      })),
    };
  }
}
