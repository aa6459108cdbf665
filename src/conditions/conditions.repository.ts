import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';
import { CompiledCondition, wholeProjectSettings } from './condition-compiler';
import type { ConditionGroup } from './condition.types';

/** A segment as membership rules see it: its condition and the segments it names directly. */
export interface StoredSegment {
  id: string;
  condition: ConditionGroup;
  segment_refs: string[];
}

/**
 * The statements of the condition language: the segment graph that
 * membership rules inline, and the two ways to run a compiled condition that
 * every feature shares (count the audience, test one contact). A feature's own
 * queries with a compiled fragment in them (segment member pages, a campaign's
 * recipients) live in that feature's repository.
 */
@Injectable()
export class ConditionsRepository {
  /**
   * The named segments and everything they refer to, transitively, within
   * the project. UNION (not UNION ALL) stops the walk on a cycle.
   */
  segmentGraph(manager: EntityManager, projectId: string, ids: string[]): Promise<StoredSegment[]> {
    return queryRows<StoredSegment>(
      manager,
      `WITH RECURSIVE reachable(id) AS (
         SELECT unnest($2::uuid[])
         UNION
         SELECT unnest(s.segment_refs) FROM segments s JOIN reachable r ON s.id = r.id WHERE s.project_id = $1
       )
       SELECT s.id, s.condition, s.segment_refs FROM segments s JOIN reachable r ON s.id = r.id
       WHERE s.project_id = $1`,
      [projectId, ids],
    );
  }

  /** Ids of the segments that refer to `id`, directly or through others. */
  async referrersOf(manager: EntityManager, projectId: string, id: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `WITH RECURSIVE referrers(id) AS (
         SELECT s.id FROM segments s WHERE s.project_id = $1 AND s.segment_refs @> ARRAY[$2::uuid]
         UNION
         SELECT s.id FROM segments s JOIN referrers r ON s.segment_refs @> ARRAY[r.id] WHERE s.project_id = $1
       )
       SELECT id FROM referrers`,
      [projectId, id],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Contacts matching a condition compiled with alias "c" and purpose
   * "count", under the plan settings of wholeProjectSettings(). They are SET
   * LOCAL, so `manager` must be in a transaction (they last until it ends).
   */
  async count(manager: EntityManager, compiled: CompiledCondition): Promise<number> {
    for (const setting of wholeProjectSettings(compiled)) await manager.query(setting);
    const [row] = await queryRows<{ count: string }>(
      manager,
      `SELECT count(*) AS count FROM contacts c WHERE ${compiled.sql}`,
      compiled.params,
    );
    return Number(row.count);
  }

  /** Whether contact `contactId` matches a condition compiled with alias "c" and paramOffset 1. */
  /** Of these contacts, the ids that match ($1 is the ids; the compiled condition's parameters follow). */
  async matchingIds(
    manager: EntityManager,
    contactIds: string[],
    compiled: CompiledCondition,
  ): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT c.id FROM contacts c WHERE c.id = ANY($1::uuid[]) AND ${compiled.sql}`,
      [contactIds, ...compiled.params],
    );
    return rows.map((r) => r.id);
  }
}
