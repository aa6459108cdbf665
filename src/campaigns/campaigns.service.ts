import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { ApiException, FieldError } from '../common/errors/api-exception';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, Page, pageOf } from '../common/pagination/pagination';
import type { ConditionGroup } from '../conditions/condition.types';
import { ConditionsService } from '../conditions/conditions.service';
import { ContactsService } from '../contacts/contacts.service';
import { newId } from '../database/id';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { DomainsService } from '../domains/domains.service';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { CAMPAIGN_JOBS, CampaignJobData, campaignJobId } from '../queue/jobs';
import { PRIORITY, QUEUES } from '../queue/queue.constants';
import { EmailSource } from '../sending/email.entity';
import { EmailsService } from '../sending/emails.service';
import { renderFailure } from '../templates/templates.service';
import { AudienceType, Campaign, CampaignStatus } from './campaign.entity';
import { CampaignCounts, CampaignsRepository } from './campaigns.repository';
import {
  CampaignResponse,
  CampaignStatsResponse,
  toCampaignResponse,
} from './dto/campaign.response';
import type { CampaignTestResponse } from './dto/campaign-test.response';
import type { CreateCampaignDto } from './dto/create-campaign.dto';
import type { ListCampaignsQueryDto } from './dto/list-campaigns.query';
import type { SendCampaignDto } from './dto/send-campaign.dto';
import type { TestCampaignDto } from './dto/test-campaign.dto';
import type { UpdateCampaignDto } from './dto/update-campaign.dto';

/** How far ahead a campaign may be scheduled. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 3600 * 1000;

export const CAMPAIGN_EVENTS = {
  STARTED: 'campaign.started',
  SENT: 'campaign.sent',
  CANCELLED: 'campaign.cancelled',
} as const;

/** Options of every RUN job: the id is the campaign's, and a finished job leaves nothing that would block a new one. */
function runJobOptions(campaignId: string, delay: number) {
  return {
    jobId: campaignJobId(campaignId),
    delay: Math.max(0, delay),
    attempts: 1000,
    backoff: { type: 'fixed', delay: 5000 },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

/**
 * Campaigns: the resource, its status machine and its statistics. Every
 * transition locks the campaign row, checks the status it starts from (409
 * otherwise), and writes the new status with its event in one transaction;
 * jobs are added or removed after commit. The fan-out itself is
 * CampaignRunner's.
 *
 *   DRAFT → SCHEDULED (send with a future time) → SENDING (its time) → SENT
 *   DRAFT → SENDING (send now); SCHEDULED → DRAFT (PATCH scheduledAt:null)
 *   SCHEDULED → CANCELLED; SENDING → CANCELLED (what is not yet sent)
 */
@Injectable()
export class CampaignsService {
  private readonly logger = new Logger(CampaignsService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.CAMPAIGNS) private readonly queue: Queue<CampaignJobData>,
    private readonly campaigns: CampaignsRepository,
    private readonly conditions: ConditionsService,
    private readonly domains: DomainsService,
    private readonly emails: EmailsService,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
  ) {}

  async create(projectId: string, dto: CreateCampaignDto): Promise<CampaignResponse> {
    await this.domains.assertCanSend(projectId, dto.from);
    const row = await this.dataSource.transaction(async (manager) => {
      const audience = await this.checkAudience(manager, projectId, {
        audienceType: dto.audienceType,
        segmentId: dto.segmentId ?? null,
        audienceFilter: dto.audienceFilter ?? null,
      });
      return this.campaigns.insert(manager, {
        id: newId(),
        projectId,
        name: dto.name,
        description: dto.description ?? null,
        subject: dto.subject,
        body: dto.body,
        fromEmail: dto.from,
        fromName: dto.fromName ?? null,
        replyTo: dto.replyTo ?? null,
        ...audience,
        trackOpens: dto.trackOpens ?? true,
        trackClicks: dto.trackClicks ?? true,
        status: CampaignStatus.DRAFT,
      } as QueryDeepPartialEntity<Campaign>);
    });
    return toCampaignResponse(row);
  }

  async list(projectId: string, query: ListCampaignsQueryDto): Promise<Page<CampaignResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.campaigns.page(
      this.dataSource.manager,
      projectId,
      { status: query.status, search: query.search },
      afterId,
      limit,
    );
    return pageOf(rows, limit, total, toCampaignResponse, (row) => row.id);
  }

  async get(projectId: string, id: string): Promise<CampaignResponse> {
    return toCampaignResponse(await this.find(this.dataSource.manager, projectId, id));
  }

  /** DRAFT or SCHEDULED only. `scheduledAt: null` returns a SCHEDULED campaign to DRAFT; a time moves its schedule. */
  async update(projectId: string, id: string, dto: UpdateCampaignDto): Promise<CampaignResponse> {
    if (dto.from !== undefined) await this.domains.assertCanSend(projectId, dto.from);
    const { row, reschedule } = await this.dataSource.transaction(async (manager) => {
      const current = await this.lockOrFail(manager, projectId, id);
      if (current.status !== CampaignStatus.DRAFT && current.status !== CampaignStatus.SCHEDULED) {
        throw illegal(current, 'be changed', 'Only DRAFT and SCHEDULED campaigns can be changed.');
      }
      const changes: QueryDeepPartialEntity<Campaign> = {};
      if (dto.name !== undefined) changes.name = dto.name;
      if (dto.description !== undefined) changes.description = dto.description;
      if (dto.subject !== undefined) changes.subject = dto.subject;
      if (dto.body !== undefined) changes.body = dto.body;
      if (dto.from !== undefined) changes.fromEmail = dto.from;
      if (dto.fromName !== undefined) changes.fromName = dto.fromName;
      if (dto.replyTo !== undefined) changes.replyTo = dto.replyTo;
      if (dto.trackOpens !== undefined) changes.trackOpens = dto.trackOpens;
      if (dto.trackClicks !== undefined) changes.trackClicks = dto.trackClicks;
      if (
        dto.audienceType !== undefined ||
        dto.segmentId !== undefined ||
        dto.audienceFilter !== undefined
      ) {
        const type = dto.audienceType ?? current.audienceType;
        const typeChanged = type !== current.audienceType;
        // A new audience type drops the other type's field unless the request sets it.
        Object.assign(
          changes,
          await this.checkAudience(manager, projectId, {
            audienceType: type,
            segmentId:
              dto.segmentId !== undefined ? dto.segmentId : typeChanged ? null : current.segmentId,
            audienceFilter:
              dto.audienceFilter !== undefined
                ? dto.audienceFilter
                : typeChanged
                  ? null
                  : current.audienceFilter,
          }),
        );
      }
      let reschedule: 'remove' | Date | null = null;
      if (dto.scheduledAt !== undefined) {
        if (dto.scheduledAt === null) {
          if (current.status === CampaignStatus.SCHEDULED) {
            changes.status = CampaignStatus.DRAFT;
            changes.scheduledAt = null;
            reschedule = 'remove';
          }
        } else {
          if (current.status !== CampaignStatus.SCHEDULED) {
            throw illegal(
              current,
              'be given a schedule by PATCH',
              'Schedule a DRAFT campaign with POST /campaigns/{id}/send {scheduledFor}.',
            );
          }
          const at = futureTime(dto.scheduledAt, 'scheduledAt');
          if (!at)
            throw ApiException.validation([
              {
                field: 'scheduledAt',
                message: 'scheduledAt must be in the future',
                code: 'custom',
              },
            ]);
          changes.scheduledAt = at;
          reschedule = at;
        }
      }
      const row =
        Object.keys(changes).length > 0
          ? await this.campaigns.update(manager, current.id, changes)
          : current;
      return { row, reschedule };
    });
    if (reschedule === 'remove') await this.removeJob(row.id);
    else if (reschedule) {
      await this.removeJob(row.id);
      await this.addRunJob(row.id, reschedule.getTime() - Date.now());
    }
    return toCampaignResponse(row);
  }

  /** DRAFT only: anything that started sending keeps its record. */
  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    await this.dataSource.transaction(async (manager) => {
      const current = await this.lockOrFail(manager, projectId, id);
      if (current.status !== CampaignStatus.DRAFT) {
        throw illegal(
          current,
          'be deleted',
          'Only DRAFT campaigns can be deleted; cancel a SCHEDULED or SENDING one.',
        );
      }
      await this.campaigns.delete(manager, current.id);
    });
    return { id, deleted: true };
  }

  /**
   * Send now (scheduledFor omitted, null or past) or at a time (at most a year
   * ahead): from DRAFT, or from SCHEDULED to move or drop the wait. The
   * sender and the audience are checked again: the domain or the segment may
   * be gone since the campaign was saved.
   */
  async send(projectId: string, id: string, dto: SendCampaignDto): Promise<CampaignResponse> {
    const at = dto.scheduledFor ? futureTime(dto.scheduledFor, 'scheduledFor') : null;
    const { row, started } = await this.dataSource.transaction(async (manager) => {
      const current = await this.lockOrFail(manager, projectId, id);
      if (current.status !== CampaignStatus.DRAFT && current.status !== CampaignStatus.SCHEDULED) {
        throw illegal(
          current,
          'be sent',
          'A campaign is sent once; create a new campaign to send again.',
        );
      }
      await this.domains.assertCanSend(projectId, current.fromEmail, manager);
      await this.checkAudience(manager, projectId, current);
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
    await this.removeJob(row.id);
    await this.addRunJob(row.id, at ? at.getTime() - Date.now() : 0);
    return toCampaignResponse(row);
  }

  /**
   * A SCHEDULED campaign whose time has come starts (the RUN job calls this);
   * anything else is left as it is. Answers the campaign as it now is.
   */
  async startIfDue(campaignId: string): Promise<Campaign | null> {
    const { row, started } = await this.dataSource.transaction(async (manager) => {
      const current = await this.campaigns.lock(manager, null, campaignId);
      if (!current || current.status !== CampaignStatus.SCHEDULED)
        return { row: current, started: null };
      if (current.scheduledAt && current.scheduledAt.getTime() > Date.now() + 1000)
        return { row: current, started: null };
      return this.start(manager, current);
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
        const current = await this.lockOrFail(manager, projectId, id);
        if (
          current.status !== CampaignStatus.SCHEDULED &&
          current.status !== CampaignStatus.SENDING
        ) {
          throw illegal(
            current,
            'be cancelled',
            'Only SCHEDULED and SENDING campaigns can be cancelled.',
          );
        }
        const cancelled =
          current.status === CampaignStatus.SENDING
            ? await this.emails.cancelQueuedOfCampaign(manager, current.id)
            : 0;
        const row = await this.campaigns.update(manager, current.id, {
          status: CampaignStatus.CANCELLED,
          cancelledAt: () => 'now()',
          ...(current.status === CampaignStatus.SENDING ? { finishedAt: () => 'now()' } : {}),
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
    if (row.startedAt === null) await this.removeJob(row.id);
    return toCampaignResponse(row);
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

  /**
   * `[TEST] ` + subject, rendered for the contact with that address (created,
   * not subscribed, when there is none: every email record has a contact),
   * sent at transactional priority, not tracked, not marketing (the tester
   * need not be subscribed) and not linked to the campaign: no status or
   * statistic changes.
   */
  async test(projectId: string, id: string, dto: TestCampaignDto): Promise<CampaignTestResponse> {
    const campaign = await this.find(this.dataSource.manager, projectId, id);
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

  async stats(projectId: string, id: string): Promise<CampaignStatsResponse> {
    const campaign = await this.find(this.dataSource.manager, projectId, id);
    // Counts read after the status: a SENT status always comes with final counts.
    const counts = await this.campaigns.counts(this.dataSource.manager, campaign.id);
    return toStats(campaign.status, campaign.recipientCount ?? 0, counts);
  }

  /** The audience a campaign sends to, as one condition (the subscribed/suppressed rule is the fan-out query's). */
  audienceCondition(
    campaign: Pick<Campaign, 'audienceType' | 'segmentId' | 'audienceFilter'>,
  ): ConditionGroup {
    switch (campaign.audienceType) {
      case AudienceType.SEGMENT:
        return {
          logic: 'AND',
          conditions: [{ field: 'segment', operator: 'in', value: campaign.segmentId as string }],
        };
      case AudienceType.FILTERED:
        return campaign.audienceFilter as unknown as ConditionGroup;
      default:
        return { logic: 'AND', conditions: [] };
    }
  }

  async addRunJob(campaignId: string, delay: number): Promise<void> {
    await this.queue.add(CAMPAIGN_JOBS.RUN, { campaignId }, runJobOptions(campaignId, delay));
  }

  /** Drops a waiting or delayed RUN job; an active one finds the new status itself. */
  private async removeJob(campaignId: string): Promise<void> {
    try {
      await this.queue.remove(campaignJobId(campaignId));
    } catch (error) {
      this.logger.warn(
        { err: error, campaignId },
        'could not remove a campaign job (it is running; it follows the new status)',
      );
    }
  }

  /**
   * The audience fields that belong to `audienceType`, checked: SEGMENT needs
   * a segment of this project, FILTERED a valid condition, and neither may
   * carry the other type's field.
   */
  private async checkAudience(
    manager: EntityManager,
    projectId: string,
    audience: { audienceType: AudienceType; segmentId: string | null; audienceFilter: unknown },
  ): Promise<Pick<Campaign, 'audienceType' | 'segmentId' | 'audienceFilter'>> {
    const errors: FieldError[] = [];
    const { audienceType: type, segmentId, audienceFilter } = audience;
    if (type === AudienceType.SEGMENT && !segmentId)
      errors.push(required('segmentId', 'segmentId is required when audienceType is SEGMENT'));
    if (type !== AudienceType.SEGMENT && segmentId)
      errors.push(
        notAllowed('segmentId', `segmentId applies to SEGMENT campaigns only, not ${type}`),
      );
    if (
      type === AudienceType.FILTERED &&
      (audienceFilter === null || audienceFilter === undefined)
    ) {
      errors.push(
        required('audienceFilter', 'audienceFilter is required when audienceType is FILTERED'),
      );
    }
    if (type !== AudienceType.FILTERED && audienceFilter !== null && audienceFilter !== undefined) {
      errors.push(
        notAllowed(
          'audienceFilter',
          `audienceFilter applies to FILTERED campaigns only, not ${type}`,
        ),
      );
    }
    if (errors.length > 0) throw ApiException.validation(errors);
    if (type === AudienceType.SEGMENT) {
      const problems = await this.conditions.validate(
        manager,
        this.audienceCondition({ audienceType: type, segmentId, audienceFilter: null }),
        {
          projectId,
          path: 'segmentId',
        },
      );
      if (problems.length > 0) {
        throw ApiException.validation([
          { field: 'segmentId', message: `Unknown segment id ${segmentId}`, code: 'custom' },
        ]);
      }
    }
    if (type === AudienceType.FILTERED) {
      await this.conditions.assertValid(manager, audienceFilter, {
        projectId,
        path: 'audienceFilter',
      });
    }
    return {
      audienceType: type,
      segmentId: type === AudienceType.SEGMENT ? segmentId : null,
      audienceFilter:
        type === AudienceType.FILTERED ? (audienceFilter as Record<string, unknown>) : null,
    };
  }

  private async find(manager: EntityManager, projectId: string, id: string): Promise<Campaign> {
    const row = await this.campaigns.findById(manager, projectId, id);
    if (!row) throw ApiException.notFound('campaign', id);
    return row;
  }

  private async lockOrFail(
    manager: EntityManager,
    projectId: string,
    id: string,
  ): Promise<Campaign> {
    const row = await this.campaigns.lock(manager, projectId, id);
    if (!row) throw ApiException.notFound('campaign', id);
    return row;
  }
}

export function toStats(
  status: CampaignStatus,
  recipients: number,
  counts: CampaignCounts,
): CampaignStatsResponse {
  const rate = (n: number) => (counts.sent > 0 ? Math.min(1, n / counts.sent) : 0);
  return {
    status,
    recipients,
    ...counts,
    openRate: rate(counts.opened),
    clickRate: rate(counts.clicked),
    bounceRate: rate(counts.bounced),
    unsubscribeRate: rate(counts.unsubscribed),
  };
}

/** A time in the future, or null for one in the past (send now); 422 beyond a year. */
function futureTime(value: string, field: string): Date | null {
  const at = new Date(value);
  if (at.getTime() <= Date.now()) return null;
  if (at.getTime() - Date.now() > MAX_SCHEDULE_AHEAD_MS) {
    throw ApiException.validation([
      { field, message: `${field} must be at most one year ahead`, code: 'too_big' },
    ]);
  }
  return at;
}

function illegal(campaign: Campaign, what: string, suggestion: string): ApiException {
  return ApiException.conflict(
    `Campaign ${campaign.id} is ${campaign.status} and cannot ${what}`,
    suggestion,
  );
}

function required(field: string, message: string): FieldError {
  return { field, message, code: 'required' };
}

function notAllowed(field: string, message: string): FieldError {
  return { field, message, code: 'custom' };
}
