import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { CompiledCondition } from '../conditions/condition-compiler';
import type { ContactRow } from '../contacts/contact.view';
import { Segment } from './segment.entity';

/** Member pages walk contacts in id windows that grow geometrically; see members(). */
const FIRST_WINDOW = 2_000;
const WINDOW_GROWTH = 4;

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
   * The contacts are walked in windows of ids, newest first, each window
   * four times larger than the one before (2,000, 8,000, 32,000, ...), and
   * the condition is applied within each window until `limit` members are
   * found. One query over the whole project would leave the plan to row
   * estimates Postgres cannot make for jsonb expressions: it then filters
   * every contact before sorting, so a first page costs as much as a count.
   * In windows, a first page reads only as many contacts as it needs, and a
   * segment with few or no members costs at most about 1.33 full scans.
   */
  async members(
    projectId: string,
    compiled: CompiledCondition,
    limit: number,
    beforeId?: string,
    firstWindow = FIRST_WINDOW,
  ): Promise<ContactRow[]> {
    const found: ContactRow[] = [];
    let upper = beforeId ?? null;
    let window = firstWindow;
    for (;;) {
      const lower = await this.windowStart(projectId, upper, window);
      found.push(...(await this.membersBetween(compiled, lower, upper, limit - found.length)));
      if (found.length >= limit || lower === null) return found;
      upper = lower;
      window *= WINDOW_GROWTH;
    }
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
      `SELECT c.id, c.project_id AS "projectId", c.email, c.subscribed, c.suppressed, c.data,
              c.created_at AS "createdAt", c.updated_at AS "updatedAt"
       FROM contacts c
       WHERE ${[compiled.sql, ...bounds].join(' AND ')}
       ORDER BY c.id DESC
       LIMIT $${params.length}`,
      params,
    );
  }
}
