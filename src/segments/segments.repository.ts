import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { CompiledCondition, wholeProjectSettings } from '../conditions/condition-compiler';
import type { ContactRow } from '../contacts/contact.view';
import { Segment } from './segment.entity';

/** Member pages walk contacts in id windows that grow geometrically; see members(). */
const FIRST_WINDOW = 2_000;
const WINDOW_GROWTH = 4;
const MAX_WINDOWED_SCAN = 250_000;

const MEMBER_COLUMNS = `c.id, c.project_id AS "projectId", c.email, c.subscribed, c.suppressed, c.data,
  c.created_at AS "createdAt", c.updated_at AS "updatedAt"`;

/** Every query of the segments feature: the segment rows and the member queries built on compiled conditions. */
@Injectable()
export class SegmentsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private db(manager?: EntityManager): EntityManager {
    return manager ?? this.dataSource.manager;
  }

  /**
   * Serialises writes of one project's segments, so two concurrent edits
   * cannot each pass the cycle check and together form a cycle (A → B, B → A).
   */
  async lockProject(manager: EntityManager, projectId: string): Promise<void> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtext('mailwright:segments:' || $1))`, [
      projectId,
    ]);
  }

  listQuery(projectId: string) {
    return this.dataSource
      .getRepository(Segment)
      .createQueryBuilder('s')
      .where('s.project_id = :projectId', { projectId });
  }

  findOne(projectId: string, id: string, manager?: EntityManager): Promise<Segment | null> {
    return this.db(manager).findOne(Segment, { where: { projectId, id } });
  }

  save(segment: Segment, manager?: EntityManager): Promise<Segment> {
    return this.db(manager).save(Segment, segment);
  }

  async delete(projectId: string, id: string, manager: EntityManager): Promise<void> {
    await manager.delete(Segment, { projectId, id });
  }

  /** Segments whose condition names `id` in a membership rule. */
  referrers(
    projectId: string,
    id: string,
    manager?: EntityManager,
  ): Promise<Array<{ id: string; name: string }>> {
    return this.db(manager).query(
      `SELECT id, name FROM segments WHERE project_id = $1 AND segment_refs @> ARRAY[$2::uuid] ORDER BY id`,
      [projectId, id],
    );
  }

  /**
   * Stores a count unless the condition changed since counting started, so
   * a slow count never overwrites the count of a newer condition.
   */
  async storeCount(id: string, count: number, countedCondition: unknown): Promise<void> {
    await this.dataSource.query(
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
   * email, say) or scan once, as a count would.
   */
  async members(
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
      const lower = await this.windowStart(projectId, upper, window);
      found.push(...(await this.membersBetween(compiled.rows, lower, upper, limit - found.length)));
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
    found.push(...(await this.membersBefore(compiled.count, upper, limit - found.length)));
    return found;
  }

  /**
   * The last resort of members(): the newest members below `upper` in one
   * query, planned like a count. The OFFSET 0 fence keeps Postgres from
   * walking the id index backwards in the hope of finding members early, a
   * bet that loses when they are old (it reads every newer contact first).
   */
  private membersBefore(
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
    return this.dataSource.transaction(async (manager) => {
      for (const setting of wholeProjectSettings(compiled)) await manager.query(setting);
      return manager.query(
        `SELECT * FROM (
           SELECT ${MEMBER_COLUMNS} FROM contacts c WHERE ${compiled.sql}${bound} OFFSET 0
         ) AS m
         ORDER BY m.id DESC
         LIMIT $${params.length}`,
        params,
      );
    });
  }

  /** The id `window` contacts below `upper` (newest first), or null when fewer remain: the last window is the rest. */
  private async windowStart(
    projectId: string,
    upper: string | null,
    window: number,
  ): Promise<string | null> {
    const params: unknown[] = [projectId, window - 1];
    if (upper) params.push(upper);
    const rows: Array<{ id: string }> = await this.dataSource.query(
      `SELECT c.id FROM contacts c WHERE c.project_id = $1${upper ? ' AND c.id < $3::uuid' : ''}
       ORDER BY c.id DESC OFFSET $2 LIMIT 1`,
      params,
    );
    return rows[0]?.id ?? null;
  }

  /** Members with lower <= id < upper (either bound may be open), newest first. */
  private membersBetween(
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
    return this.dataSource.query(
      `SELECT ${MEMBER_COLUMNS}
       FROM contacts c
       WHERE ${[compiled.sql, ...bounds].join(' AND ')}
       ORDER BY c.id DESC
       LIMIT $${params.length}`,
      params,
    );
  }
}
