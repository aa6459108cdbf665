import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { ApiException, FieldError } from '../common/errors/api-exception';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, Page, pageOf } from '../common/pagination/pagination';
import type { ConditionGroup } from '../conditions/condition.types';
import { ConditionsService } from '../conditions/conditions.service';
import { newId } from '../database/id';
import { DomainsService } from '../domains/domains.service';
import { AudienceType, Campaign, CampaignStatus } from './campaign.entity';
import { TemplatesService } from '../templates/templates.service';
import { CampaignJobs } from './campaign-jobs';
import { CampaignCounts, CampaignsRepository } from './campaigns.repository';
import {
  CampaignResponse,
  CampaignStatsResponse,
  toCampaignResponse,
} from './dto/campaign.response';
import type { CreateCampaignDto } from './dto/create-campaign.dto';
import type { ListCampaignsQueryDto } from './dto/list-campaigns.query';
import type { UpdateCampaignDto } from './dto/update-campaign.dto';
import { ReadDatabase } from '../database/read-database';

/** How far ahead a campaign may be scheduled. */
/** Statuses after which a campaign's stats no longer change. */
const FINISHED: ReadonlySet<CampaignStatus> = new Set([
  CampaignStatus.SENT,
  CampaignStatus.CANCELLED,
]);
const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 3600 * 1000;

/**
 * Campaigns: the resource (create, read, change, delete), its audience and
 * its statistics. Changes lock the campaign row and accept DRAFT and
 * SCHEDULED campaigns only (409 otherwise). Sending and cancelling are
 * CampaignStatusService's, the test send CampaignTestSendService's.
 */
@Injectable()
export class CampaignsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: list pages (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly campaigns: CampaignsRepository,
    private readonly conditions: ConditionsService,
    private readonly domains: DomainsService,
    private readonly jobs: CampaignJobs,
    private readonly templates: TemplatesService,
  ) {}

  async create(projectId: string, dto: CreateCampaignDto): Promise<CampaignResponse> {
    await this.templates.assertRenderable(projectId, { subject: dto.subject, body: dto.body });
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
      this.read.manager,
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
    await this.templates.assertRenderable(projectId, {
      subject: dto.subject ?? '',
      body: dto.body ?? '',
    });
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
    if (reschedule === 'remove') await this.jobs.removeJob(row.id);
    else if (reschedule) {
      await this.jobs.removeJob(row.id);
      await this.jobs.addRunJob(row.id, reschedule.getTime() - Date.now());
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

  async stats(projectId: string, id: string): Promise<CampaignStatsResponse> {
    // A finished campaign's stats come from the read database: when it shows the campaign
    // finished it holds the final counts too (a replica replays commits in order, and the counts
    // are read after the status). A running campaign, or one the replica has not seen, is read
    // on the primary.
    if (this.read.dataSource !== this.dataSource) {
      const seen = await this.campaigns.findById(this.read.manager, projectId, id);
      if (seen && FINISHED.has(seen.status)) {
        const counts = await this.campaigns.counts(this.read.manager, seen.id);
        return toStats(seen.status, seen.recipientCount ?? 0, counts);
      }
    }
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

  /**
   * The audience fields that belong to `audienceType`, checked: SEGMENT needs
   * a segment of this project, FILTERED a valid condition, and neither may
   * carry the other type's field.
   */
  async checkAudience(
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

  async find(manager: EntityManager, projectId: string, id: string): Promise<Campaign> {
    const row = await this.campaigns.findById(manager, projectId, id);
    if (!row) throw ApiException.notFound('campaign', id);
    return row;
  }

  async lockOrFail(manager: EntityManager, projectId: string, id: string): Promise<Campaign> {
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
  // `sent` counts every message a server accepted, also those that bounced or were reported later.
  const { accepted: sent, ...byStatus } = counts;
  const rate = (n: number) => (sent > 0 ? Math.min(1, n / sent) : 0);
  return {
    status,
    recipients,
    ...byStatus,
    sent,
    openRate: rate(counts.opened),
    clickRate: rate(counts.clicked),
    bounceRate: rate(counts.bounced),
    unsubscribeRate: rate(counts.unsubscribed),
    complaintRate: rate(counts.complained),
  };
}

/** A time in the future, or null for one in the past (send now); 422 beyond a year. */
export function futureTime(value: string, field: string): Date | null {
  const at = new Date(value);
  if (at.getTime() <= Date.now()) return null;
  if (at.getTime() - Date.now() > MAX_SCHEDULE_AHEAD_MS) {
    throw ApiException.validation([
      { field, message: `${field} must be at most one year ahead`, code: 'too_big' },
    ]);
  }
  return at;
}

export function illegal(campaign: Campaign, what: string, suggestion: string): ApiException {
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
