import { InjectDataSource } from '@nestjs/typeorm';
import { Injectable, Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { DomainsService } from '../domains/domains.service';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { DisabledProjects } from '../projects/disabled-projects';
import { ProjectsService } from '../projects/projects.service';
import { EmailsService } from '../sending/emails.service';
import { Campaign, CampaignStatus } from './campaign.entity';
import { CampaignJobs } from './campaign-jobs';
import { CampaignsRepository } from './campaigns.repository';
import { CampaignsService, futureTime, illegal } from './campaigns.service';
import { CampaignResponse, toCampaignResponse } from './dto/campaign.response';
import type { SendCampaignDto } from './dto/send-campaign.dto';

export const CAMPAIGN_EVENTS = {
  STARTED: 'campaign.started',
  SENT: 'campaign.sent',
  CANCELLED: 'campaign.cancelled',
} as const;

/**
 * The campaign status machine. Every transition locks the campaign row,
 * checks the status it starts from (409 otherwise), and writes the new status
 * with its event in one transaction; jobs are added or removed after commit
 * (CampaignJobs). The fan-out itself is CampaignRunner's.
 *
 *   DRAFT → SCHEDULED (send with a future time) → SENDING (its time) → SENT
 *   DRAFT → SENDING (send now); SCHEDULED → DRAFT (PATCH scheduledAt:null, CampaignsService.update)
 *   SCHEDULED → CANCELLED; SENDING → CANCELLED (what is not yet sent)
 *   SENDING ⇄ PAUSED (by hand, or → PAUSED by sender health); PAUSED → CANCELLED
 */
@Injectable()
export class CampaignStatusService {
  private readonly logger = new Logger(CampaignStatusService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly campaigns: CampaignsRepository,
    private readonly resource: CampaignsService,
    private readonly jobs: CampaignJobs,
    private readonly domains: DomainsService,
    private readonly emails: EmailsService,
    private readonly events: EventsService,
    private readonly disabledProjects: DisabledProjects,
    private readonly projects: ProjectsService,
  ) {}

  /**
   * Send now (scheduledFor omitted, null or past) or at a time (at most a year
   * ahead): from DRAFT, or from SCHEDULED to move or drop the wait. The
   * sender and the audience are checked again: the domain or the segment may
   * be gone since the campaign was saved.
   */
  async send(projectId: string, id: string, dto: SendCampaignDto): Promise<CampaignResponse> {
    const at = dto.scheduledFor ? futureTime(dto.scheduledFor, 'scheduledFor') : null;
    const { row, started } = await this.dataSource.transaction(async (manager) => {
      const current = await this.resource.lockOrFail(manager, projectId, id);
      if (current.status !== CampaignStatus.DRAFT && current.status !== CampaignStatus.SCHEDULED) {
        throw illegal(
          current,
          'be sent',
          'A campaign is sent once; create a new campaign to send again.',
        );
      }
      await this.projects.assertMarketingAllowed(projectId, manager);
      await this.domains.assertCanSend(projectId, current.fromEmail, manager);
      await this.resource.checkAudience(manager, projectId, current);
      if (at) {
        return {
          row: await this.campaigns.update(manager, current.id, {
            status: CampaignStatus.SCHEDULED,
            scheduledAt: at,
          }),
          started: null,
        };
      }
      return this.start(manager, current);
    });
    if (started) await this.events.publish([{ ...started, email: null }]);
    await this.jobs.removeJob(row.id);
    await this.jobs.addRunJob(row.id, at ? at.getTime() - Date.now() : 0);
    return toCampaignResponse(row);
  }

  /**
   * A SCHEDULED campaign whose time has come starts (the RUN job calls this),
   * unless its project is disabled; anything else is left as it is. Answers
   * the campaign as it now is.
   */
  async startIfDue(campaignId: string): Promise<Campaign | null> {
    const { row, started } = await this.dataSource.transaction(async (manager) => {
      const current = await this.campaigns.lock(manager, null, campaignId);
      if (!current || current.status !== CampaignStatus.SCHEDULED)
        return { row: current, started: null };
      if (current.scheduledAt && current.scheduledAt.getTime() > Date.now() + 1000)
        return { row: current, started: null };
      if (await this.disabledProjects.isDisabled(current.projectId, manager))
        return { row: current, started: null };
      const started = await this.start(manager, current);
      // Due while sender health is PAUSED: started (its audience fixed) but paused at once.
      if (await this.projects.isSendingPaused(current.projectId, manager))
        started.row = await this.campaigns.update(manager, current.id, {
          status: CampaignStatus.PAUSED,
        });
      return started;
    });
    if (started) await this.events.publish([{ ...started, email: null }]);
    return row;
  }

  /**
   * → SENDING: the content is frozen (shared content every recipient's
   * email renders at delivery), the counters are created, and
   * `campaign.started` is recorded. The RUN job does the rest.
   */
  private async start(
    manager: EntityManager,
    current: Campaign,
  ): Promise<{ row: Campaign; started: EventRow }> {
    const contentId = await this.emails.createContent(manager, current.projectId, {
      subject: current.subject,
      body: current.body,
    });
    await this.campaigns.createCounters(manager, current.id);
    const row = await this.campaigns.update(manager, current.id, {
      status: CampaignStatus.SENDING,
      startedAt: () => 'now()',
      contentId,
      fanoutCursor: null,
      fanoutDone: false,
    });
    const started = await this.events.record(manager, {
      projectId: row.projectId,
      contactId: null,
      name: CAMPAIGN_EVENTS.STARTED,
      data: { campaignId: row.id, name: row.name },
    });
    return { row, started };
  }

  /**
   * SCHEDULED → CANCELLED (its job is removed), or SENDING → CANCELLED: in
   * the same transaction every email not yet handed to SMTP (QUEUED) becomes
   * CANCELLED. The row lock orders this after a fan-out batch in flight and
   * before the next (which then sees CANCELLED and stops).
   */
  async cancel(projectId: string, id: string): Promise<CampaignResponse> {
    const { row, event } = await retryOnDeadlock(() =>
      this.dataSource.transaction(async (manager) => {
        const current = await this.resource.lockOrFail(manager, projectId, id);
        if (
          current.status !== CampaignStatus.SCHEDULED &&
          current.status !== CampaignStatus.SENDING &&
          current.status !== CampaignStatus.PAUSED
        ) {
          throw illegal(
            current,
            'be cancelled',
            'Only SCHEDULED, SENDING and PAUSED campaigns can be cancelled.',
          );
        }
        const started = current.status !== CampaignStatus.SCHEDULED;
        const cancelled = started
          ? await this.emails.cancelQueuedOfCampaign(manager, current.id)
          : 0;
        const row = await this.campaigns.update(manager, current.id, {
          status: CampaignStatus.CANCELLED,
          cancelledAt: () => 'now()',
          ...(started ? { finishedAt: () => 'now()' } : {}),
        });
        const event = await this.events.record(manager, {
          projectId: row.projectId,
          contactId: null,
          name: CAMPAIGN_EVENTS.CANCELLED,
          data: { campaignId: row.id, name: row.name, cancelledEmails: cancelled },
        });
        return { row, event };
      }),
    );
    await this.events.publish([{ ...event, email: null }]);
    if (row.startedAt === null) await this.jobs.removeJob(row.id);
    return toCampaignResponse(row);
  }

  /**
   * SENDING → PAUSED: the fan-out stops at its next batch and nothing more is
   * handed to SMTP (delivery holds the jobs already queued: EmailsRepository.claim).
   */
  async pause(projectId: string, id: string): Promise<CampaignResponse> {
    const row = await this.dataSource.transaction(async (manager) => {
      const current = await this.resource.lockOrFail(manager, projectId, id);
      if (current.status !== CampaignStatus.SENDING)
        throw illegal(current, 'be paused', 'Only a SENDING campaign can be paused.');
      return this.campaigns.update(manager, current.id, { status: CampaignStatus.PAUSED });
    });
    return toCampaignResponse(row);
  }

  /** PAUSED → SENDING (403 SENDING_PAUSED while the project's sender health is PAUSED); its RUN job resumes where it stopped. */
  async resume(projectId: string, id: string): Promise<CampaignResponse> {
    const row = await this.dataSource.transaction(async (manager) => {
      const current = await this.resource.lockOrFail(manager, projectId, id);
      if (current.status !== CampaignStatus.PAUSED)
        throw illegal(current, 'be resumed', 'Only a PAUSED campaign can be resumed.');
      await this.projects.assertMarketingAllowed(projectId, manager);
      return this.campaigns.update(manager, current.id, { status: CampaignStatus.SENDING });
    });
    await this.jobs.removeJob(row.id);
    await this.jobs.addRunJob(row.id, 0);
    return toCampaignResponse(row);
  }

  /** Sender health PAUSED, in its transaction: every SENDING campaign of the project → PAUSED. */
  pauseSendingOfProject(manager: EntityManager, projectId: string): Promise<string[]> {
    return this.campaigns.pauseSendingOfProject(manager, projectId);
  }

  /**
   * SENDING → SENT once the fan-out is complete and no email is QUEUED or
   * SENDING (checked under the row lock, from the counters). Answers whether
   * it happened now.
   */
  async finishIfDone(campaignId: string): Promise<boolean> {
    const finished = await this.dataSource.transaction(async (manager) => {
      const current = await this.campaigns.lock(manager, null, campaignId);
      if (!current || current.status !== CampaignStatus.SENDING || !current.fanoutDone) return null;
      const counts = await this.campaigns.counts(manager, campaignId);
      if (counts.queued + counts.sending > 0) return null;
      const row = await this.campaigns.update(manager, campaignId, {
        status: CampaignStatus.SENT,
        finishedAt: () => 'now()',
      });
      const event = await this.events.record(manager, {
        projectId: row.projectId,
        contactId: null,
        name: CAMPAIGN_EVENTS.SENT,
        data: { campaignId: row.id, name: row.name, ...counts },
      });
      return { event, counts, projectId: row.projectId };
    });
    if (!finished) return false;
    const { event, counts, projectId } = finished;
    // SENT only says that nothing is left to try; failures must not pass without a line above info.
    if (counts.failed > 0) {
      const fields = {
        campaignId,
        projectId,
        sent: counts.sent,
        failed: counts.failed,
        bounced: counts.bounced,
        suppressed: counts.suppressed,
      };
      if (counts.sent === 0)
        this.logger.error(
          fields,
          'campaign SENT without a message sent: its emails FAILED (their error says why)',
        );
      else this.logger.warn(fields, 'campaign SENT with FAILED emails (their error says why)');
    }
    await this.events.publish([{ ...event, email: null }]);
    return true;
  }
}
