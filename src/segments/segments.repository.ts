import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { CompiledCondition } from '../conditions/condition-compiler';
import type { ContactRow } from '../contacts/contact.view';
import { Segment } from './segment.entity';

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

  async countMembers(compiled: CompiledCondition): Promise<number> {
    const rows: Array<{ count: string }> = await this.dataSource.query(
      `SELECT count(*) AS count FROM contacts c WHERE ${compiled.sql}`,
      compiled.params,
    );
    return Number(rows[0].count);
  }

  /**
   * Members newest first, keyset on the id; `limit` rows at most. The
   * compiled fragment's placeholders start at $1, the cursor and limit
   * follow them.
   */
  async members(
    compiled: CompiledCondition,
    limit: number,
    beforeId?: string,
  ): Promise<ContactRow[]> {
    const params = [...compiled.params];
    let cursor = '';
    if (beforeId) {
      params.push(beforeId);
      cursor = ` AND c.id < $${params.length}::uuid`;
    }
    params.push(limit);
    return this.dataSource.query(
      `SELECT c.id, c.project_id AS "projectId", c.email, c.subscribed, c.suppressed, c.data,
              c.created_at AS "createdAt", c.updated_at AS "updatedAt"
       FROM contacts c
       WHERE ${compiled.sql}${cursor}
       ORDER BY c.id DESC
       LIMIT $${params.length}`,
      params,
    );
  }
}
