import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import type { CompiledCondition } from '../conditions/condition-compiler';
import { keysetRows } from '../database/keyset-rows';
import { containsPattern } from '../database/like-pattern';
import { preparedRows, queryRows } from '../database/query-rows';
import { COUNTER_SLOTS } from './campaign-counter.entity';
import { Campaign, CampaignStatus } from './campaign.entity';

export interface CampaignListFilter {
  status?: CampaignStatus;
  search?: string;
}

/** The sums of a campaign's counter rows. */
export interface CampaignCounts {
  queued: number;
  sending: number;
  sent: number;
  failed: number;
  bounced: number;
  suppressed: number;
  cancelled: number;
  opened: number;
  clicked: number;
  unsubscribed: number;
  complained: number;
  /** Accepted by a server (late bounces and complaints included): the stats' `sent`. */
  accepted: number;
}

/** A campaign the recovery sweep looks at. */
export interface OpenCampaign {
  id: string;
  status: CampaignStatus;
  scheduledAt: Date | null;
}

/** A recipient as the fan-out reads it. */
export interface AudienceContact {
  id: string;
  email: string;
}

const COUNT_COLUMNS = [
  'queued',
  'sending',
  'sent',
  'failed',
  'bounced',
  'suppressed',
  'cancelled',
  'opened',
  'clicked',
  'unsubscribed',
  'complained',
  'accepted',
] as const;

/**
 * Every statement on campaigns and their counters, and the campaign's
 * audience query (contacts through a compiled condition).
 */
@Injectable()
export class CampaignsRepository {
  async insert(
    manager: EntityManager,
    fields: QueryDeepPartialEntity<Campaign>,
  ): Promise<Campaign> {
    await manager
      .createQueryBuilder()
      .insert()
      .into(Campaign)
      .values(fields)
      .updateEntity(false)
      .execute();
    return (await manager.findOne(Campaign, { where: { id: fields.id as string } })) as Campaign;
  }

  page(
    manager: EntityManager,
    projectId: string,
    filter: CampaignListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: Campaign[]; total: number }> {
    const qb = manager
      .createQueryBuilder(Campaign, 'c')
      .where('c.project_id = :projectId', { projectId });
    if (filter.status) qb.andWhere('c.status = :status', { status: filter.status });
    if (filter.search)
      qb.andWhere('c.name ILIKE :search', { search: containsPattern(filter.search) });
    return keysetRows(qb, 'c.id', afterId, limit);
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<Campaign | null> {
    return manager.findOne(Campaign, { where: { id, projectId } });
  }

  /** The row locked until the caller's transaction ends; `projectId` null for background work (any project). */
  lock(manager: EntityManager, projectId: string | null, id: string): Promise<Campaign | null> {
    const qb = manager
      .createQueryBuilder(Campaign, 'c')
      .setLock('pessimistic_write')
      .where('c.id = :id', { id });
    if (projectId) qb.andWhere('c.project_id = :projectId', { projectId });
    return qb.getOne();
  }

  async update(
    manager: EntityManager,
    id: string,
    changes: QueryDeepPartialEntity<Campaign>,
  ): Promise<Campaign> {
    await manager
      .createQueryBuilder()
      .update(Campaign)
      .set(changes)
      .where('id = :id', { id })
      .execute();
    return (await manager.findOne(Campaign, { where: { id } })) as Campaign;
  }

  /** Sender health PAUSED: every SENDING campaign of the project → PAUSED; answers their ids. */
  async pauseSendingOfProject(manager: EntityManager, projectId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `UPDATE campaigns SET status = 'PAUSED', updated_at = now()
        WHERE project_id = $1 AND status = 'SENDING' RETURNING id`,
      [projectId],
    );
    return rows.map((row) => row.id);
  }

  async delete(manager: EntityManager, id: string): Promise<void> {
    await manager.createQueryBuilder().delete().from(Campaign).where('id = :id', { id }).execute();
  }

  /** The zeroed counter rows, written before the campaign's first email (the triggers only update them). */
  async createCounters(manager: EntityManager, campaignId: string): Promise<void> {
    await queryRows(
      manager,
      `INSERT INTO campaign_counters (campaign_id, slot) SELECT $1, s FROM generate_series(0, $2 - 1) AS s
       ON CONFLICT DO NOTHING`,
      [campaignId, COUNTER_SLOTS],
    );
  }

  /**
   * Enabled projects with a SENDING campaign, and how many SENDING campaigns
   * `projectId` has: what a campaign's feed divides the delivery backlog by.
   */
  async sendingLoad(
    manager: EntityManager,
    projectId: string,
  ): Promise<{ projects: number; ofProject: number }> {
    const [row] = await queryRows<{ projects: number; ofProject: number }>(
      manager,
      `SELECT count(DISTINCT c.project_id)::int AS projects,
              count(*) FILTER (WHERE c.project_id = $1)::int AS "ofProject"
         FROM campaigns c JOIN projects p ON p.id = c.project_id
        WHERE c.status = 'SENDING' AND p.enabled`,
      [projectId],
    );
    return { projects: row?.projects ?? 0, ofProject: row?.ofProject ?? 0 };
  }

  /** One statement, so one snapshot: the sums equal a count of the campaign's emails at that instant. */
  async counts(manager: EntityManager, campaignId: string): Promise<CampaignCounts> {
    const [row] = await queryRows<Record<string, string | null>>(
      manager,
      `SELECT ${COUNT_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(', ')} FROM campaign_counters WHERE campaign_id = $1`,
      [campaignId],
    );
    const counts = {} as CampaignCounts;
    for (const c of COUNT_COLUMNS) counts[c] = Number(row?.[c] ?? 0);
    return counts;
  }

  /**
   * A fan-out batch's first statement: locks the campaign row while it is
   * SENDING and moves the committed resume point (the batch's last contact,
   * null: unchanged) in the same statement. False when the campaign is no
   * longer SENDING (a cancel committed first): write nothing more.
   */
  async advanceFanout(
    manager: EntityManager,
    id: string,
    cursor: string | null,
    done: boolean,
  ): Promise<boolean> {
    const rows = await preparedRows(
      manager,
      `UPDATE campaigns SET fanout_cursor = COALESCE($2::uuid, fanout_cursor), fanout_done = $3, updated_at = now()
        WHERE id = $1 AND status = 'SENDING' RETURNING 1`,
      [id, cursor, done],
    );
    return rows.length > 0;
  }

  /** The exact audience once every record exists: the sum of the campaign's counters (a resumed fan-out may differ from the first count). */
  async settleRecipientCount(manager: EntityManager, id: string): Promise<void> {
    await queryRows(
      manager,
      `UPDATE campaigns SET recipient_count = (SELECT sum(queued + sending + sent + failed + bounced + suppressed + cancelled)
                                                 FROM campaign_counters WHERE campaign_id = $1)
        WHERE id = $1`,
      [id],
    );
  }

  openCampaigns(manager: EntityManager): Promise<OpenCampaign[]> {
    return queryRows<OpenCampaign>(
      manager,
      `SELECT id, status, scheduled_at AS "scheduledAt" FROM campaigns WHERE status IN ('SCHEDULED', 'SENDING')`,
    );
  }

  /**
   * Opens a cursor over the audience in contact-id order: subscribed,
   * not suppressed, matching `compiled` (alias "c", placeholders from $1),
   * after `afterId`, created no later than `startedAt`. In a REPEATABLE READ
   * transaction the cursor reads one snapshot however long the fan-out takes.
   */
  async declareAudience(
    manager: EntityManager,
    cursor: string,
    compiled: CompiledCondition,
    afterId: string | null,
    startedAt: Date,
  ): Promise<void> {
    const n = compiled.params.length;
    await manager.query(
      `DECLARE ${cursor} NO SCROLL CURSOR FOR
       SELECT c.id, c.email FROM contacts c
        WHERE ${compiled.sql} AND c.subscribed = TRUE AND c.suppressed = FALSE
          AND c.id > COALESCE($${n + 1}::uuid, '00000000-0000-0000-0000-000000000000') AND c.created_at <= $${n + 2}
        ORDER BY c.id`,
      [...compiled.params, afterId, startedAt],
    );
  }

  fetchAudience(manager: EntityManager, cursor: string, count: number): Promise<AudienceContact[]> {
    return queryRows<AudienceContact>(manager, `FETCH FORWARD ${Math.trunc(count)} FROM ${cursor}`);
  }

  /** How many contacts the audience query of declareAudience() finds (same arguments, same snapshot). */
  async countAudience(
    manager: EntityManager,
    compiled: CompiledCondition,
    afterId: string | null,
    startedAt: Date,
  ): Promise<number> {
    const n = compiled.params.length;
    const [row] = await queryRows<{ n: string }>(
      manager,
      `SELECT count(*) AS n FROM contacts c
        WHERE ${compiled.sql} AND c.subscribed = TRUE AND c.suppressed = FALSE
          AND c.id > COALESCE($${n + 1}::uuid, '00000000-0000-0000-0000-000000000000') AND c.created_at <= $${n + 2}`,
      [...compiled.params, afterId, startedAt],
    );
    return Number(row.n);
  }
}
