import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CompiledCondition, wholeProjectSettings } from '../conditions/condition-compiler';
import { CONTACT_COLUMNS, type ContactRow } from '../contacts/contact.row';
import { inTransaction } from '../database/in-transaction';
import { keysetRows } from '../database/keyset-rows';
import { queryRows } from '../database/query-rows';
import { Segment } from './segment.entity';

/** Member pages walk contacts in id windows that grow geometrically; see members(). */
const FIRST_WINDOW = 2_000;
const WINDOW_GROWTH = 4;
const MAX_WINDOWED_SCAN = 250_000;

/** The columns a new segment is created with; the rest are the database's defaults. */
export type NewSegment = Pick<
  Segment,
  'id' | 'projectId' | 'name' | 'description' | 'condition' | 'segmentRefs'
>;

/** What an update may change; memberCount goes back to null when the condition changed. */
export type SegmentChanges = Partial<
  Pick<
    Segment,
    'name' | 'description' | 'condition' | 'segmentRefs' | 'memberCount' | 'memberCountAt'
  >
>;

/**
 * Every statement of the segments feature: the segment rows and the member
 * queries built on compiled conditions (ConditionsService counts and tests
 * single contacts; the pages of a segment's members are this feature's own).
 * Every method takes the caller's EntityManager first.
 */
@Injectable()
export class SegmentsRepository {
  /**
   * Serialises writes of one project's segments, so two concurrent edits
   * cannot each pass the cycle check and together form a cycle (A → B, B → A).
   */
  async lockProject(manager: EntityManager, projectId: string): Promise<void> {
    await queryRows(
      manager,
      `SELECT pg_advisory_xact_lock(hashtext('mailwright:segments:' || $1))`,
      [projectId],
    );
  }

  /** One page of the project's segments, newest first (limit + 1 rows, for hasMore), and their total. */
  page(
    manager: EntityManager,
    projectId: string,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: Segment[]; total: number }> {
    const qb = manager
      .getRepository(Segment)
      .createQueryBuilder('s')
      .where('s.project_id = :projectId', { projectId });
    return keysetRows(qb, 's.id', afterId, limit);
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<Segment | null> {
    return manager.findOne(Segment, { where: { projectId, id } });
  }

  insert(manager: EntityManager, segment: NewSegment): Promise<Segment> {
    return manager.save(
      Segment,
      manager.create(Segment, { ...segment, memberCount: null, memberCountAt: null }),
    );
  }

  /** Writes `changes` onto the loaded segment and answers it as stored. */
  update(manager: EntityManager, segment: Segment, changes: SegmentChanges): Promise<Segment> {
    return manager.save(Segment, manager.merge(Segment, segment, changes));
  }

  async delete(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const result = await manager.delete(Segment, { projectId, id });
    return (result.affected ?? 0) > 0;
  }

  /** Segments whose condition names `id` in a membership rule. */
  referrers(
    manager: EntityManager,
    projectId: string,
    id: string,
  ): Promise<Array<{ id: string; name: string }>> {
    return queryRows(
      manager,
      `SELECT id, name FROM segments WHERE project_id = $1 AND segment_refs @> ARRAY[$2::uuid] ORDER BY id`,
      [projectId, id],
    );
  }

  /**
   * Stores a count unless the condition changed since counting started, so
   * a slow count never overwrites the count of a newer condition.
   */
  async storeCount(
    manager: EntityManager,
    id: string,
    count: number,
    countedCondition: unknown,
  ): Promise<void> {
    await queryRows(
      manager,
      `UPDATE segments SET member_count = $2, member_count_at = now() WHERE id = $1 AND condition = $3::jsonb`,
      [id, count, JSON.stringify(countedCondition)],
    );
  }

  /**
   * Members newest first, keyset on the id; `limit` rows at most.
   *
   * One query over the whole project leaves the plan to row estimates
   * Postgres cannot make for jsonb expressions (no statistics): it filters
   * every contact, probes events for each, then sorts, so a first page costs
   * as much as a count. Instead the newest contacts are read in windows of
   * ids (2,000, then four times larger each time) and the condition applied
   * within each window, until the page is full. When the members seen so
   * far are too sparse for windows to finish the page within about 250,000
   * contacts (or none were seen after the first windows), the rest is left
   * to one query, where Postgres may find an index (a trigram search on the
   * email, say) or scan once, as a count would. That query's plan settings
   * are SET LOCAL: it runs in the caller's transaction, or opens its own.
   */
  async members(
    manager: EntityManager,
    projectId: string,
    compiled: { rows: CompiledCondition; count: CompiledCondition },
    limit: number,
    beforeId?: string,
    firstWindow = FIRST_WINDOW,
  ): Promise<ContactRow[]> {
    const found: ContactRow[] = [];
    let upper = beforeId ?? null;
    let window = firstWindow;
    let scanned = 0;
    for (;;) {
      const lower = await this.windowStart(manager, projectId, upper, window);
      found.push(
        ...(await this.membersBetween(manager, compiled.rows, lower, upper, limit - found.length)),
      );
      if (found.length >= limit || lower === null) return found;
      upper = lower;
      scanned += window;
      window *= WINDOW_GROWTH;
      if (scanned >= firstWindow * (1 + WINDOW_GROWTH)) {
        const expectedScan =
          found.length === 0 ? Infinity : ((limit - found.length) * scanned) / found.length;
        if (expectedScan > MAX_WINDOWED_SCAN) break;
      }
    }
    // Its plan settings are SET LOCAL: in the caller's transaction, or one of its own.
    found.push(
      ...(await inTransaction(manager, (m) =>
        this.membersBefore(m, compiled.count, upper, limit - found.length),
      )),
    );
    return found;
  }

  /**
   * The last resort of members(): the newest members below `upper` in one
   * query, planned like a count. The OFFSET 0 fence keeps Postgres from
   * walking the id index backwards in the hope of finding members early, a
   * bet that loses when they are old (it reads every newer contact first).
   */
  private async membersBefore(
    manager: EntityManager,
    compiled: CompiledCondition,
    upper: string | null,
    limit: number,
  ): Promise<ContactRow[]> {
    const params = [...compiled.params];
    let bound = '';
    if (upper) {
      params.push(upper);
      bound = ` AND c.id < $${params.length}::uuid`;
    }
    params.push(limit);
    for (const setting of wholeProjectSettings(compiled)) await manager.query(setting);
    return queryRows<ContactRow>(
      manager,
      `SELECT * FROM (
         SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE ${compiled.sql}${bound} OFFSET 0
       ) AS m
       ORDER BY m.id DESC
       LIMIT $${params.length}`,
      params,
    );
  }

  /** The id `window` contacts below `upper` (newest first), or null when fewer remain: the last window is the rest. */
  private async windowStart(
    manager: EntityManager,
    projectId: string,
    upper: string | null,
    window: number,
  ): Promise<string | null> {
    const params: unknown[] = [projectId, window - 1];
    if (upper) params.push(upper);
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT c.id FROM contacts c WHERE c.project_id = $1${upper ? ' AND c.id < $3::uuid' : ''}
       ORDER BY c.id DESC OFFSET $2 LIMIT 1`,
      params,
    );
    return rows[0]?.id ?? null;
  }

  /** Members with lower <= id < upper (either bound may be open), newest first. */
  private membersBetween(
    manager: EntityManager,
    compiled: CompiledCondition,
    lower: string | null,
    upper: string | null,
    limit: number,
  ): Promise<ContactRow[]> {
    const params = [...compiled.params];
    const bounds: string[] = [];
    if (upper) {
      params.push(upper);
      bounds.push(`c.id < $${params.length}::uuid`);
    }
    if (lower) {
      params.push(lower);
      bounds.push(`c.id >= $${params.length}::uuid`);
    }
    params.push(limit);
    return queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS}
       FROM contacts c
       WHERE ${[compiled.sql, ...bounds].join(' AND ')}
       ORDER BY c.id DESC
       LIMIT $${params.length}`,
      params,
    );
  }
}
