import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ConditionsService } from '../conditions/conditions.service';
import { inTransaction } from '../database/in-transaction';
import { sqlState, SQLSTATE } from '../database/postgres-errors';
import type { ContactRow } from '../contacts/contact.row';
import type { RecordedEvent } from '../events/event-hooks';
import { EventsService } from '../events/events.service';
import {
  APPLY_PARAM_OFFSET,
  KeptSegment,
  MembershipChange,
  SegmentMembershipRepository,
  WHOLE_PARAM_OFFSET,
} from './segment-membership.repository';
import { SegmentsRepository } from './segments.repository';

/** Dirty rows taken per evaluation transaction. */
export const EVALUATE_BATCH = 1000;
/** A batch that lost a deadlock (or met a contact erased under it) is run again this many times in all. */
const BATCH_ATTEMPTS = 3;
const FOREIGN_KEY_VIOLATION = '23503';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `segment.<segmentId>.entered` / `segment.<segmentId>.exited`: the system events of membership changes. */
export function segmentMembershipEventName(
  segmentId: string,
  change: 'entered' | 'exited',
): string {
  return `segment.${segmentId}.${change}`;
}

export interface EvaluationResult {
  /** Dirty rows taken (a contact marked twice counts twice). */
  claimed: number;
  entered: number;
  exited: number;
}

export interface SweepResult extends EvaluationResult {
  segments: number;
  /** Contacts whose membership the sweep found out of date (marked dirty, then evaluated). */
  differences: number;
}

/**
 * Live membership of the segments that enabled SEGMENT_ENTRY/SEGMENT_EXIT
 * workflows name ("kept" segments).
 *
 * - keep(): the workflows module declares, in its own transaction, the set
 *   of kept segments of a project. A newly kept segment gets its current
 *   members as a baseline, with no events: contacts already in the segment
 *   when a workflow is enabled do not trigger it. A segment no longer kept
 *   loses its rows.
 * - Changes: triggers mark changed contacts of projects with a kept segment
 *   dirty in the transaction of the change (SegmentMembership migration) and
 *   NOTIFY the worker processes (SegmentDirtyListener), which add the
 *   EVALUATE job; evaluateDirty() takes the dirty rows in batches and
 *   re-evaluates each contact against each kept segment of its project with
 *   the compiled condition restricted to the batch (`c.id = ANY($1)`),
 *   inserting and deleting membership rows and recording
 *   `segment.<id>.entered|exited` in the same transaction, published after
 *   commit. A batch's rows are deleted in the transaction that applies them.
 * - sweep(): the periodic job. For each kept segment the set difference
 *   between its condition now and its rows, both ways, is marked dirty and
 *   then evaluated like any change: time windows (`within`,
 *   `triggeredWithin`, ...) that lapsed, segments a membership rule inlines
 *   that changed, changes made while the segment was being kept, and dirty
 *   rows whose wake-up was lost.
 *
 * Membership rows change only in evaluateDirty() (one batch at a time across
 * the deployment) and in keep() (under the project's segment lock, which
 * batches take shared), so every change is recorded exactly once.
 */
@Injectable()
export class SegmentMembershipService {
  private readonly logger = new Logger(SegmentMembershipService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly memberships: SegmentMembershipRepository,
    private readonly segments: SegmentsRepository,
    private readonly conditions: ConditionsService,
    private readonly events: EventsService,
  ) {}

  /**
   * Declares the complete set of the project's kept segments, inside the
   * caller's transaction (the workflows module calls it whenever a workflow
   * is created, updated, enabled, disabled or deleted, with the segment ids
   * of every enabled, non-deleted SEGMENT_ENTRY/SEGMENT_EXIT workflow of the
   * project). Idempotent; when the set is unchanged it costs the project's
   * segment lock and one indexed read. Ids that name no segment of the
   * project are ignored. The lock (SegmentsRepository.lockProject) is held
   * until the caller's transaction ends.
   */
  async keep(manager: EntityManager, projectId: string, segmentIds: string[]): Promise<void> {
    const wanted = [
      ...new Set(segmentIds.map((id) => id.toLowerCase()).filter((id) => UUID_RE.test(id))),
    ];
    await inTransaction(manager, async (m) => {
      await this.segments.lockProject(m, projectId);
      const current = (await this.memberships.keptSegments(m, projectId)).map((s) => s.id);
      const existing = await this.memberships.existingIds(m, projectId, wanted);
      const added = existing.filter((id) => !current.includes(id));
      const dropped = current.filter((id) => !wanted.includes(id));
      if (added.length === 0 && dropped.length === 0) return;
      await this.memberships.setKept(m, projectId, dropped, false);
      await this.memberships.deleteMembers(m, [...dropped, ...added]);
      await this.memberships.setKept(m, projectId, added, true);
      for (const id of added) {
        const segment = await this.memberships.keptSegment(m, id);
        if (!segment) continue;
        const compiled = await this.conditions.compile(m, segment.condition, {
          projectId,
          paramOffset: WHOLE_PARAM_OFFSET,
          purpose: 'count',
        });
        await this.memberships.baseline(m, id, projectId, compiled);
      }
    });
  }

  /**
   * A segment's condition changed (SegmentsService.update, in its
   * transaction, under the project's segment lock): the kept segments whose
   * membership depends on it get their differences marked dirty, so the
   * evaluator records the entries and exits the new condition makes.
   */
  async conditionChanged(
    manager: EntityManager,
    projectId: string,
    segmentId: string,
  ): Promise<void> {
    const dependents = await this.memberships.keptDependents(manager, projectId, segmentId);
    let marked = 0;
    for (const segment of dependents) marked += await this.markDifferences(manager, segment);
    if (marked > 0) await this.memberships.notifyDirty(manager);
  }

  /** Exact member count of a kept segment. */
  count(manager: EntityManager, segmentId: string): Promise<number> {
    return this.memberships.count(manager, segmentId);
  }

  /**
   * A page of a kept segment's members (newest first, `limit` rows at most)
   * and their exact count, read from one snapshot so the two agree (on `from`: the read
   * database for an API page).
   */
  page(
    from: DataSource,
    segmentId: string,
    limit: number,
    beforeId?: string,
  ): Promise<{ rows: ContactRow[]; total: number }> {
    return from.transaction('REPEATABLE READ', async (manager) => ({
      rows: await this.memberships.members(manager, segmentId, limit, beforeId),
      total: await this.memberships.count(manager, segmentId),
    }));
  }

  /** Whether dirty rows wait that no evaluation is taking now (the EVALUATE job's completion check). */
  hasPendingDirty(): Promise<boolean> {
    return this.memberships.hasUnclaimedDirty(this.dataSource.manager);
  }

  /** Evaluates dirty rows, batch after batch, until none is left. */
  async evaluateDirty(): Promise<EvaluationResult> {
    const total: EvaluationResult = { claimed: 0, entered: 0, exited: 0 };
    for (;;) {
      const batch = await this.evaluateBatchWithRetry();
      total.claimed += batch.claimed;
      total.entered += batch.entered;
      total.exited += batch.exited;
      if (batch.claimed < EVALUATE_BATCH) return total;
    }
  }

  /**
   * The periodic job: marks each kept segment's differences (one
   * transaction per segment, NOTIFY on commit), then evaluates every dirty
   * row left, its own and any whose wake-up was lost.
   */
  async sweep(): Promise<SweepResult> {
    const kept = await this.memberships.keptSegments(this.dataSource.manager);
    let differences = 0;
    for (const { id } of kept) {
      differences += await this.dataSource.transaction(async (manager) => {
        const segment = await this.memberships.keptSegment(manager, id);
        if (!segment) return 0;
        const marked = await this.markDifferences(manager, segment);
        if (marked > 0) await this.memberships.notifyDirty(manager);
        return marked;
      });
    }
    const evaluated = await this.evaluateDirty();
    return { segments: kept.length, differences, ...evaluated };
  }

  private async markDifferences(manager: EntityManager, segment: KeptSegment): Promise<number> {
    const compiled = await this.conditions.compile(manager, segment.condition, {
      projectId: segment.projectId,
      paramOffset: WHOLE_PARAM_OFFSET,
      purpose: 'count',
    });
    return this.memberships.markDifferences(manager, segment.id, segment.projectId, compiled);
  }

  private async evaluateBatchWithRetry(): Promise<EvaluationResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.evaluateBatch();
      } catch (error) {
        const state = sqlState(error);
        const retriable = state === SQLSTATE.DEADLOCK_DETECTED || state === FOREIGN_KEY_VIOLATION;
        if (!retriable || attempt >= BATCH_ATTEMPTS) throw error;
        this.logger.warn(
          { err: error, attempt },
          'segment membership batch rolled back; running it again',
        );
      }
    }
  }

  /**
   * One batch in one transaction: take the dirty rows, re-evaluate their
   * contacts against the kept segments of their projects, apply, record
   * the events; publish them after commit. A failure rolls everything back,
   * the dirty rows included.
   */
  private async evaluateBatch(): Promise<EvaluationResult> {
    const { claimed, recorded } = await this.dataSource.transaction(async (manager) => {
      await this.memberships.lockEvaluation(manager);
      const rows = await this.memberships.claimDirty(manager, EVALUATE_BATCH);
      const byProject = new Map<string, Set<string>>();
      for (const row of rows) {
        const contacts = byProject.get(row.projectId) ?? new Set<string>();
        contacts.add(row.contactId);
        byProject.set(row.projectId, contacts);
      }
      const projectIds = [...byProject.keys()].sort();
      await this.memberships.lockProjectsShared(manager, projectIds);
      const events: RecordedEvent[] = [];
      for (const projectId of projectIds) {
        const contactIds = [...(byProject.get(projectId) as Set<string>)].sort();
        const changes: Array<MembershipChange & { segmentId: string }> = [];
        for (const segment of await this.memberships.keptSegments(manager, projectId)) {
          const compiled = await this.conditions.compile(manager, segment.condition, {
            projectId,
            paramOffset: APPLY_PARAM_OFFSET,
            purpose: 'rows',
          });
          const applied = await this.memberships.apply(
            manager,
            segment.id,
            projectId,
            contactIds,
            compiled,
          );
          changes.push(...applied.map((change) => ({ ...change, segmentId: segment.id })));
        }
        if (changes.length === 0) continue;
        const rowsRecorded = await this.events.recordMany(
          manager,
          changes.map((change) => ({
            projectId,
            contactId: change.contactId,
            name: segmentMembershipEventName(change.segmentId, change.change),
            data: { segmentId: change.segmentId },
          })),
        );
        events.push(...rowsRecorded.map((row, i) => ({ ...row, email: changes[i].email })));
      }
      return { claimed: rows.length, recorded: events };
    });
    if (recorded.length > 0) await this.events.publish(recorded);
    return {
      claimed,
      entered: recorded.filter((event) => event.name.endsWith('.entered')).length,
      exited: recorded.filter((event) => event.name.endsWith('.exited')).length,
    };
  }
}
