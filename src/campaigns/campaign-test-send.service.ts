import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ContactsService } from '../contacts/contacts.service';
import { DomainsService } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import { PRIORITY } from '../queue/queue.constants';
import { EmailSource } from '../sending/email.entity';
import { EmailsService } from '../sending/emails.service';
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
    const composed = await this.dataSource
      .transaction(async (manager) => {
        const emails = [];
        for (const address of [...dto.emails].sort()) {
          const { contact } = await this.contacts.upsertByEmail(manager, projectId, address, {
            defaultSubscribed: false,
          });
          emails.push(
            await this.emails.compose({
              projectId,
              contact,
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
          );
        }
        const queued = await this.emails.insert(manager, emails);
        return { emails, queued };
      })
      .catch((error: unknown) => {
        throw renderFailure(error);
      });
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
