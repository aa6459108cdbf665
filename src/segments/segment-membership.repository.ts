import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CompiledCondition, wholeProjectSettings } from '../conditions/condition-compiler';
import type { ConditionGroup } from '../conditions/condition.types';
import { CONTACT_COLUMNS, type ContactRow } from '../contacts/contact.row';
import { queryRows } from '../database/query-rows';

/** The channel the dirty-marking triggers notify (SegmentMembership migration). */
export const DIRTY_CHANNEL = 'mw_segments_dirty';

/**
 * Placeholders apply() puts before the compiled condition: $1 the batch's
 * contact ids, $2 the segment, $3 its project. Compile with this paramOffset.
 */
export const APPLY_PARAM_OFFSET = 3;
/** Placeholders baseline() and markDifferences() put first: $1 the segment, $2 its project. */
export const WHOLE_PARAM_OFFSET = 2;

export interface KeptSegment {
  id: string;
  projectId: string;
  condition: ConditionGroup;
}

export interface DirtyContact {
  contactId: string;
  projectId: string;
}

/** One membership change apply() made, with the contact's email for the after-commit hooks. */
export interface MembershipChange {
  change: 'entered' | 'exited';
  contactId: string;
  email: string;
}

/**
 * Every statement on `segment_memberships`, `segment_membership_dirty` and the
 * `membership_kept_at` mark of segments. Compiled conditions come in alias
 * "c" with the placeholder offsets above. Manager first, like every repository.
 */
@Injectable()
export class SegmentMembershipRepository {
  /** The kept segments of one project, or of every project (the sweep), in id order. */
  keptSegments(manager: EntityManager, projectId?: string): Promise<KeptSegment[]> {
    return queryRows<KeptSegment>(
      manager,
      `SELECT s.id, s.project_id AS "projectId", s.condition
         FROM segments s
        WHERE s.membership_kept_at IS NOT NULL${projectId ? ' AND s.project_id = $1' : ''}
        ORDER BY s.project_id, s.id`,
      projectId ? [projectId] : [],
    );
  }

  /** One kept segment as it is now, or null when it is no longer kept (or gone). */
  async keptSegment(manager: EntityManager, id: string): Promise<KeptSegment | null> {
    const rows = await queryRows<KeptSegment>(
      manager,
      `SELECT s.id, s.project_id AS "projectId", s.condition
         FROM segments s WHERE s.id = $1 AND s.membership_kept_at IS NOT NULL`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Those of `ids` that are segments of the project. */
  async existingIds(manager: EntityManager, projectId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT id FROM segments WHERE project_id = $1 AND id = ANY($2::uuid[]) ORDER BY id`,
      [projectId, ids],
    );
    return rows.map((row) => row.id);
  }

  /**
   * The kept segments of the project whose membership depends on segment
   * `id`: itself and those whose membership rules name it, directly or
   * through others (rules inline the current condition of the named segment).
   */
  keptDependents(manager: EntityManager, projectId: string, id: string): Promise<KeptSegment[]> {
    return queryRows<KeptSegment>(
      manager,
      `WITH RECURSIVE dependents(id) AS (
         SELECT $2::uuid
         UNION
         SELECT s.id FROM segments s JOIN dependents d ON s.segment_refs @> ARRAY[d.id] WHERE s.project_id = $1
       )
       SELECT s.id, s.project_id AS "projectId", s.condition
         FROM segments s JOIN dependents d ON s.id = d.id
        WHERE s.project_id = $1 AND s.membership_kept_at IS NOT NULL
        ORDER BY s.id`,
      [projectId, id],
    );
  }

  /** Marks segments kept (since now) or not kept; the membership rows are the caller's. */
  async setKept(
    manager: EntityManager,
    projectId: string,
    ids: string[],
    kept: boolean,
  ): Promise<void> {
    if (ids.length === 0) return;
    await queryRows(
      manager,
      `UPDATE segments SET membership_kept_at = ${kept ? 'now()' : 'NULL'}
        WHERE project_id = $1 AND id = ANY($2::uuid[])`,
      [projectId, ids],
    );
  }

  async deleteMembers(manager: EntityManager, segmentIds: string[]): Promise<void> {
    if (segmentIds.length === 0) return;
    await queryRows(manager, `DELETE FROM segment_memberships WHERE segment_id = ANY($1::uuid[])`, [
      segmentIds,
    ]);
  }

  /**
   * The membership of a newly kept segment: every contact matching the
   * condition now (compiled with purpose "count", WHOLE_PARAM_OFFSET), with no
   * change recorded. Runs under the whole-project plan settings, which are
   * put back afterwards: this runs inside the caller's transaction.
   */
  async baseline(
    manager: EntityManager,
    segmentId: string,
    projectId: string,
    compiled: CompiledCondition,
  ): Promise<number> {
    return this.withWholeProjectSettings(manager, compiled, async () => {
      const rows = await queryRows<{ n: number }>(
        manager,
        `WITH inserted AS (
           INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at)
           SELECT $1::uuid, c.id, $2::uuid, now() FROM contacts c WHERE ${compiled.sql}
           ON CONFLICT (segment_id, contact_id) DO NOTHING
           RETURNING 1
         )
         SELECT count(*)::int AS n FROM inserted`,
        [segmentId, projectId, ...compiled.params],
      );
      return rows[0]?.n ?? 0;
    });
  }

  /**
   * Takes up to `limit` of the oldest dirty rows: deleted now, gone for good
   * only if the caller's transaction commits (a crash puts them back).
   * SKIP LOCKED: rows another transaction is taking are left to it.
   */
  claimDirty(manager: EntityManager, limit: number): Promise<DirtyContact[]> {
    return queryRows<DirtyContact>(
      manager,
      `DELETE FROM segment_membership_dirty
        WHERE id IN (SELECT id FROM segment_membership_dirty ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING contact_id AS "contactId", project_id AS "projectId"`,
      [limit],
    );
  }

  /** Whether a dirty row is waiting that nobody is taking right now. */
  async hasUnclaimedDirty(manager: EntityManager): Promise<boolean> {
    const rows = await queryRows<{ one: number }>(
      manager,
      `SELECT 1 AS one FROM segment_membership_dirty LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
    return rows.length > 0;
  }

  /**
   * Re-evaluates the contacts `contactIds` of one project against one kept
   * segment and applies the result: the compiled condition (alias "c",
   * APPLY_PARAM_OFFSET) restricted by `c.id = ANY($1)`; matching contacts
   * not yet members are inserted, members no longer matching are deleted.
   * Answers exactly the rows inserted and deleted: a concurrent writer of
   * the same row waits on its lock and then finds it (ON CONFLICT DO NOTHING,
   * a deleted row), so each change is answered once. Matching contacts are
   * locked FOR KEY SHARE: one being erased at the same moment is either gone
   * (not matched) or waits for this transaction, never a foreign-key error.
   */
  apply(
    manager: EntityManager,
    segmentId: string,
    projectId: string,
    contactIds: string[],
    compiled: CompiledCondition,
  ): Promise<MembershipChange[]> {
    return queryRows<MembershipChange>(
      manager,
      `WITH matched AS MATERIALIZED (
         SELECT c.id FROM contacts c
          WHERE c.id = ANY($1::uuid[]) AND ${compiled.sql}
          FOR KEY SHARE OF c
       ), entered AS (
         INSERT INTO segment_memberships (segment_id, contact_id, project_id, entered_at)
         SELECT $2::uuid, m.id, $3::uuid, now() FROM matched m ORDER BY m.id
         ON CONFLICT (segment_id, contact_id) DO NOTHING
         RETURNING contact_id
       ), exited AS (
         DELETE FROM segment_memberships sm
          WHERE sm.segment_id = $2::uuid AND sm.contact_id = ANY($1::uuid[])
            AND NOT EXISTS (SELECT 1 FROM matched m WHERE m.id = sm.contact_id)
         RETURNING sm.contact_id
       )
       SELECT x.change, x.contact_id AS "contactId", c.email
         FROM (SELECT 'entered' AS change, contact_id FROM entered
               UNION ALL
               SELECT 'exited' AS change, contact_id FROM exited) x
         JOIN contacts c ON c.id = x.contact_id
        ORDER BY x.contact_id`,
      [contactIds, segmentId, projectId, ...compiled.params],
    );
  }

  /**
   * The set difference between a kept segment's condition now (compiled with
   * purpose "count", WHOLE_PARAM_OFFSET) and its membership rows, both ways,
   * written as dirty rows for the evaluator to apply: contacts that match
   * and are not members, members that no longer match. Answers how many.
   */
  async markDifferences(
    manager: EntityManager,
    segmentId: string,
    projectId: string,
    compiled: CompiledCondition,
  ): Promise<number> {
    return this.withWholeProjectSettings(manager, compiled, async () => {
      const rows = await queryRows<{ n: number }>(
        manager,
        `WITH matched AS MATERIALIZED (
           SELECT c.id FROM contacts c WHERE ${compiled.sql}
         ), members AS MATERIALIZED (
           SELECT m.contact_id AS id FROM segment_memberships m WHERE m.segment_id = $1::uuid
         ), marked AS (
           INSERT INTO segment_membership_dirty (contact_id, project_id)
           SELECT d.id, $2::uuid FROM (
             (SELECT id FROM matched EXCEPT SELECT id FROM members)
             UNION ALL
             (SELECT id FROM members EXCEPT SELECT id FROM matched)
           ) d
           RETURNING 1
         )
         SELECT count(*)::int AS n FROM marked`,
        [segmentId, projectId, ...compiled.params],
      );
      return rows[0]?.n ?? 0;
    });
  }

  /** Wakes the evaluators (delivered at commit, as the triggers' own notifications are). */
  async notifyDirty(manager: EntityManager): Promise<void> {
    await queryRows(manager, `SELECT pg_notify($1, '')`, [DIRTY_CHANNEL]);
  }

  /** Exact member count of a kept segment (an index-only scan of the primary key). */
  async count(manager: EntityManager, segmentId: string): Promise<number> {
    const rows = await queryRows<{ n: number }>(
      manager,
      `SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1`,
      [segmentId],
    );
    return rows[0]?.n ?? 0;
  }

  /**
   * A page of a kept segment's members, newest contact first, below
   * `beforeId` when given (the primary key's order: segment, then contact).
   */
  members(
    manager: EntityManager,
    segmentId: string,
    limit: number,
    beforeId?: string,
  ): Promise<ContactRow[]> {
    const params: unknown[] = [segmentId, limit];
    if (beforeId) params.push(beforeId);
    return queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS}
         FROM segment_memberships m JOIN contacts c ON c.id = m.contact_id
        WHERE m.segment_id = $1${beforeId ? ' AND m.contact_id < $3::uuid' : ''}
        ORDER BY m.contact_id DESC
        LIMIT $2`,
      params,
    );
  }

  /**
   * One evaluation batch at a time across the deployment (transaction-scoped):
   * a batch sees the committed result of the one before, so two evaluations
   * of one contact can never apply an older state after a newer one.
   */
  async lockEvaluation(manager: EntityManager): Promise<void> {
    await queryRows(
      manager,
      `SELECT pg_advisory_xact_lock(hashtext('mailwright:segments:evaluate'))`,
    );
  }

  /**
   * The shared side of SegmentsRepository.lockProject's lock (same key), for
   * the evaluator: keep() and segment edits take it exclusively, so a batch
   * never applies a segment's membership while it is being dropped or
   * rebuilt. Taken in project id order.
   */
  async lockProjectsShared(manager: EntityManager, projectIds: string[]): Promise<void> {
    for (const projectId of [...projectIds].sort()) {
      await queryRows(
        manager,
        `SELECT pg_advisory_xact_lock_shared(hashtext('mailwright:segments:' || $1))`,
        [projectId],
      );
    }
  }

  /**
   * Runs `run` under wholeProjectSettings(compiled) (SET LOCAL: the manager
   * must be in a transaction) and puts the previous values back after it, so
   * the caller's own later statements are planned as before.
   */
  private async withWholeProjectSettings<T>(
    manager: EntityManager,
    compiled: CompiledCondition,
    run: () => Promise<T>,
  ): Promise<T> {
    const [previous] = await queryRows<{ work_mem: string; enable_nestloop: string }>(
      manager,
      `SELECT current_setting('work_mem') AS work_mem, current_setting('enable_nestloop') AS enable_nestloop`,
    );
    for (const setting of wholeProjectSettings(compiled)) await manager.query(setting);
    const result = await run();
    await queryRows(
      manager,
      `SELECT set_config('work_mem', $1, true), set_config('enable_nestloop', $2, true)`,
      [previous.work_mem, previous.enable_nestloop],
    );
    return result;
  }
}
