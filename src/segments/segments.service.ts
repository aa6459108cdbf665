import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, Page, pageOf, PaginationQueryDto } from '../common/pagination/pagination';
import type { ConditionGroup } from '../conditions/condition.types';
import { ConditionsService } from '../conditions/conditions.service';
import { ContactResponse, toContactResponse } from '../contacts/dto/contact.response';
import { newId } from '../database/id';
import type { CreateSegmentDto } from './dto/create-segment.dto';
import type { PreviewSegmentDto } from './dto/preview-segment.dto';
import { SegmentPreviewResponse, SegmentResponse, toSegmentResponse } from './dto/segment.response';
import type { UpdateSegmentDto } from './dto/update-segment.dto';
import { SegmentMembershipService } from './segment-membership.service';
import { Segment } from './segment.entity';
import { SegmentChanges, SegmentsRepository } from './segments.repository';
import { sqlState, SQLSTATE } from '../database/postgres-errors';
import { Semaphore } from '../common/concurrency/semaphore';
import { ExpensiveWork } from '../common/rate-limit/expensive-work';
import { ReadDatabase } from '../database/read-database';

/**
 * How long a stored memberCount is served before it is counted again.
 * Counting a large project takes a noticeable fraction of a second, so
 * reads share one count per minute; changing the condition recounts at once.
 * A kept segment (SegmentMembershipService) is never cached: its count is
 * the exact number of its membership rows.
 */
export const MEMBER_COUNT_TTL_MS = 60_000;

const PREVIEW_SAMPLE_SIZE = 10;
/** Recounts of stale segments seen by lists running at once in one process. */
export const BACKGROUND_RECOUNTS = 2;
const BACKGROUND_RECOUNTS_WAITING = 1000;

@Injectable()
export class SegmentsService {
  private readonly logger = new Logger(SegmentsService.name);
  /** Counts in progress in this process, keyed by segment and condition, so concurrent reads share one. */
  private readonly refreshing = new Map<string, Promise<number>>();
  /** Background recounts waiting for a place (keys as in `refreshing`). */
  private readonly scheduled = new Set<string>();
  private readonly background = new Semaphore(BACKGROUND_RECOUNTS);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly segments: SegmentsRepository,
    private readonly conditions: ConditionsService,
    private readonly membership: SegmentMembershipService,
    private readonly expensive: ExpensiveWork,
    /** Counts, previews, member pages and lists tolerate lag (docs/scaling.md); writes stay on dataSource. */
    private readonly read: ReadDatabase,
  ) {}

  async create(projectId: string, dto: CreateSegmentDto): Promise<SegmentResponse> {
    const segment = await this.dataSource.transaction(async (manager) => {
      await this.segments.lockProject(manager, projectId);
      const condition = await this.conditions.assertValid(manager, dto.condition, {
        projectId,
        path: 'condition',
      });
      return this.segments.insert(manager, {
        id: newId(),
        projectId,
        name: dto.name,
        description: dto.description ?? null,
        condition,
        segmentRefs: this.conditions.referencedSegments(condition),
      });
    });
    return toSegmentResponse(
      segment,
      await this.expensive.charge(projectId, () => this.recount(segment)),
    );
  }

  async list(projectId: string, query: PaginationQueryDto): Promise<Page<SegmentResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.segments.page(this.read.manager, projectId, afterId, limit);
    const page = pageOf(
      rows,
      limit,
      total,
      (row) => row,
      (row) => row.id,
    );
    const items = await Promise.all(
      page.items.map(async (row) => toSegmentResponse(row, await this.listCount(row))),
    );
    return { ...page, items };
  }

  async get(projectId: string, id: string): Promise<SegmentResponse> {
    const segment = await this.find(this.read.manager, projectId, id);
    return toSegmentResponse(segment, await this.freshCount(segment, 'run'));
  }

  async update(projectId: string, id: string, dto: UpdateSegmentDto): Promise<SegmentResponse> {
    const { segment, conditionChanged } = await this.dataSource.transaction(async (manager) => {
      await this.segments.lockProject(manager, projectId);
      const row = await this.find(manager, projectId, id);
      const changes: SegmentChanges = {};
      if (dto.name !== undefined) changes.name = dto.name;
      if (dto.description !== undefined) changes.description = dto.description;
      let changed = false;
      if (dto.condition !== undefined) {
        const condition = await this.conditions.assertValid(manager, dto.condition, {
          projectId,
          path: 'condition',
          selfSegmentId: row.id,
        });
        changed = JSON.stringify(condition) !== JSON.stringify(row.condition);
        changes.condition = condition;
        changes.segmentRefs = this.conditions.referencedSegments(condition);
        if (changed) {
          changes.memberCount = null;
          changes.memberCountAt = null;
        }
      }
      const updated = await this.segments.update(manager, row, changes);
      // Kept segments whose membership depends on this condition get their differences evaluated.
      if (changed) await this.membership.conditionChanged(manager, projectId, row.id);
      return { segment: updated, conditionChanged: changed };
    });
    const count =
      conditionChanged && !segment.membershipKeptAt
        ? await this.expensive.charge(projectId, () => this.recount(segment))
        : await this.freshCount(segment, 'charge');
    return toSegmentResponse(segment, count);
  }

  /**
   * Refused (409) while another segment's membership rule names this one:
   * deleting it would change that segment silently. Under the project's
   * segment lock, so of concurrent deletes one succeeds and the rest are 404.
   */
  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    await this.dataSource.transaction(async (manager) => {
      await this.segments.lockProject(manager, projectId);
      const row = await this.find(manager, projectId, id);
      const referrers = await this.segments.referrers(manager, projectId, row.id);
      if (referrers.length > 0) {
        throw ApiException.conflict(
          `Segment ${row.id} is used by the membership rules of ${referrers.map((s) => `"${s.name}" (${s.id})`).join(', ')}`,
          'Remove the membership rules naming this segment from those segments, then delete it.',
        );
      }
      try {
        await this.segments.delete(manager, projectId, row.id);
      } catch (error) {
        // workflows.trigger_segment_id refers to segments ON DELETE RESTRICT.
        if (sqlState(error) === SQLSTATE.FOREIGN_KEY_VIOLATION) {
          throw ApiException.conflict(
            `Segment ${row.id} is the trigger of a workflow`,
            'Change the trigger of the workflows that enter or leave this segment (or delete them), then delete it.',
          );
        }
        throw error;
      }
    });
    return { id, deleted: true };
  }

  /**
   * Members, newest first. A kept segment's are its membership rows, the
   * same members its exact memberCount counts (a contact that changed is
   * listed as it is counted until its membership is re-evaluated). Another
   * segment's come from its condition, with `total` the memberCount (fresh
   * within MEMBER_COUNT_TTL_MS), so paging does not recount every time.
   */
  async members(
    projectId: string,
    id: string,
    query: PaginationQueryDto,
  ): Promise<Page<ContactResponse>> {
    const manager = this.read.manager;
    const segment = await this.find(manager, projectId, id);
    const limit = query.limit ?? 20;
    const beforeId = query.cursor ? decodeCursor(query.cursor) : undefined;
    if (segment.membershipKeptAt) {
      const kept = await this.membership.page(
        this.read.dataSource,
        segment.id,
        limit + 1,
        beforeId,
      );
      return pageOf(kept.rows, limit, kept.total, toContactResponse, (row) => row.id);
    }
    const compiled = await this.conditions.compileBoth(manager, segment.condition, projectId);
    // One after the other: a project's evaluation takes one database core at a time.
    const [rows, total] = await this.expensive.run(
      projectId,
      async () =>
        [
          await this.read.dataSource.transaction((m) =>
            this.segments.members(m, projectId, compiled, limit + 1, beforeId),
          ),
          await this.freshCount(segment, null),
        ] as const,
    );
    return pageOf(rows, limit, total, toContactResponse, (row) => row.id);
  }

  /** An unsaved condition: live count and the 10 newest matching contacts. */
  async preview(projectId: string, dto: PreviewSegmentDto): Promise<SegmentPreviewResponse> {
    const manager = this.read.manager;
    const condition = await this.conditions.assertValid(manager, dto.condition, {
      projectId,
      path: 'condition',
    });
    const compiled = await this.conditions.compileBoth(manager, condition, projectId);
    // One after the other: a project's evaluation takes one database core at a time. An empty
    // segment has no sample to look for (looking costs about two more counts).
    const [count, rows] = await this.expensive.run(projectId, async () => {
      const counted = await this.conditions.countCompiled(manager, compiled.count);
      if (counted === 0) return [counted, []] as const;
      return [
        counted,
        await this.read.dataSource.transaction((m) =>
          this.segments.members(m, projectId, compiled, PREVIEW_SAMPLE_SIZE),
        ),
      ] as const;
    });
    return { count, sample: rows.map(toContactResponse) };
  }

  private async find(manager: EntityManager, projectId: string, id: string): Promise<Segment> {
    const segment = await this.segments.findById(manager, projectId, id);
    if (!segment) throw ApiException.notFound('segment', id);
    return segment;
  }

  private isFresh(segment: Segment): boolean {
    return (
      segment.memberCount !== null &&
      segment.memberCountAt !== null &&
      Date.now() - segment.memberCountAt.getTime() < MEMBER_COUNT_TTL_MS
    );
  }

  /**
   * A kept segment's exact membership count; else the stored count when fresh, otherwise a count
   * now, as expensive work of the project (`run`: refused when its budget is spent; `charge`:
   * never refused; null: the caller already runs it as such).
   */
  private async freshCount(segment: Segment, budget: 'run' | 'charge' | null): Promise<number> {
    if (segment.membershipKeptAt) return this.membership.count(this.read.manager, segment.id);
    if (this.isFresh(segment)) return segment.memberCount as number;
    if (budget === null) return this.recount(segment);
    return this.expensive[budget](segment.projectId, () => this.recount(segment));
  }

  /**
   * For lists: a stale count is served while a recount runs in the
   * background, so listing many segments never waits for many counts.
   * A segment never counted is counted now; a kept one is counted exactly.
   */
  private async listCount(segment: Segment): Promise<number> {
    if (segment.membershipKeptAt) return this.membership.count(this.read.manager, segment.id);
    if (segment.memberCount === null)
      return this.expensive.charge(segment.projectId, () => this.recount(segment));
    if (!this.isFresh(segment)) this.scheduleRecount(segment);
    return segment.memberCount;
  }

  /**
   * A stale count seen by a list is recounted later, never by the list itself: at most
   * BACKGROUND_RECOUNTS at once per process and BACKGROUND_RECOUNTS_WAITING waiting, so listing
   * many stale segments cannot fill the connection pool that every tenant's requests share.
   */
  private scheduleRecount(segment: Segment): void {
    const key = countKey(segment);
    if (this.refreshing.has(key) || this.scheduled.has(key)) return;
    if (this.scheduled.size >= BACKGROUND_RECOUNTS_WAITING) return; // a later list schedules it again
    this.scheduled.add(key);
    this.background
      .run(async () => {
        this.scheduled.delete(key);
        await this.recount(segment);
      })
      .catch((error: unknown) =>
        this.logger.warn(`Background recount of segment ${segment.id} failed: ${String(error)}`),
      );
  }

  private recount(segment: Segment): Promise<number> {
    const key = countKey(segment);
    const running = this.refreshing.get(key);
    if (running) return running;
    const counted = this.countAndStore(segment).finally(() => this.refreshing.delete(key));
    this.refreshing.set(key, counted);
    return counted;
  }

  private async countAndStore(segment: Segment): Promise<number> {
    // Counted on the read database, stored on the primary.
    const manager = this.read.manager;
    const condition: ConditionGroup = segment.condition;
    const compiled = await this.conditions.compile(manager, condition, {
      projectId: segment.projectId,
      purpose: 'count',
    });
    const count = await this.conditions.countCompiled(manager, compiled);
    await this.segments.storeCount(this.dataSource.manager, segment.id, count, condition);
    return count;
  }
}

function countKey(segment: Segment): string {
  return `${segment.id}:${JSON.stringify(segment.condition)}`;
}
