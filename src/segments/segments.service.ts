import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import {
  decodeCursor,
  Page,
  pageOf,
  paginate,
  PaginationQueryDto,
} from '../common/pagination/pagination';
import type { ConditionGroup } from '../conditions/condition.types';
import { ConditionsService } from '../conditions/conditions.service';
import { ContactView, toContactView } from '../contacts/contact.view';
import { newId } from '../database/id';
import { CreateSegmentDto, PreviewSegmentDto, UpdateSegmentDto } from './dto/segment.dto';
import { Segment } from './segment.entity';
import { SegmentPreviewView, SegmentView } from './segment.view';
import { SegmentsRepository } from './segments.repository';

/**
 * How long a stored memberCount is served before it is counted again.
 * Counting a large project takes a noticeable fraction of a second, so
 * reads share one count per minute; changing the condition recounts at once.
 */
export const MEMBER_COUNT_TTL_MS = 60_000;

const PREVIEW_SAMPLE_SIZE = 10;

@Injectable()
export class SegmentsService {
  private readonly logger = new Logger(SegmentsService.name);
  /** Counts in progress in this process, keyed by segment and condition, so concurrent reads share one. */
  private readonly refreshing = new Map<string, Promise<number>>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly segments: SegmentsRepository,
    private readonly conditions: ConditionsService,
  ) {}

  async create(projectId: string, dto: CreateSegmentDto): Promise<SegmentView> {
    const segment = await this.dataSource.transaction(async (manager) => {
      await this.segments.lockProject(manager, projectId);
      const condition = await this.conditions.assertValid(dto.condition, {
        projectId,
        path: 'condition',
        manager,
      });
      const row = manager.create(Segment, {
        id: newId(),
        projectId,
        name: dto.name,
        description: dto.description ?? null,
        condition,
        segmentRefs: this.conditions.referencedSegments(condition),
        memberCount: null,
        memberCountAt: null,
      });
      return this.segments.save(row, manager);
    });
    return this.toView(segment, await this.recount(segment));
  }

  async list(projectId: string, query: PaginationQueryDto): Promise<Page<SegmentView>> {
    const page = await paginate(this.segments.listQuery(projectId), 's.id', query, (row) => row);
    const items = await Promise.all(
      page.items.map(async (row) => this.toView(row, await this.listCount(row))),
    );
    return { ...page, items };
  }

  async get(projectId: string, id: string): Promise<SegmentView> {
    const segment = await this.find(projectId, id);
    return this.toView(segment, await this.freshCount(segment));
  }

  async update(projectId: string, id: string, dto: UpdateSegmentDto): Promise<SegmentView> {
    const { segment, conditionChanged } = await this.dataSource.transaction(async (manager) => {
      await this.segments.lockProject(manager, projectId);
      const row = await this.find(projectId, id, manager);
      let changed = false;
      if (dto.name !== undefined) row.name = dto.name;
      if (dto.description !== undefined) row.description = dto.description;
      if (dto.condition !== undefined) {
        const condition = await this.conditions.assertValid(dto.condition, {
          projectId,
          path: 'condition',
          selfSegmentId: row.id,
          manager,
        });
        changed = JSON.stringify(condition) !== JSON.stringify(row.condition);
        row.condition = condition;
        row.segmentRefs = this.conditions.referencedSegments(condition);
        if (changed) {
          row.memberCount = null;
          row.memberCountAt = null;
        }
      }
      return { segment: await this.segments.save(row, manager), conditionChanged: changed };
    });
    const count = conditionChanged ? await this.recount(segment) : await this.freshCount(segment);
    return this.toView(segment, count);
  }

  /** Refused (409) while another segment's membership rule names this one: deleting it would change that segment silently. */
  async delete(projectId: string, id: string): Promise<{ id: string; deleted: true }> {
    await this.dataSource.transaction(async (manager) => {
      await this.segments.lockProject(manager, projectId);
      const row = await this.find(projectId, id, manager);
      const referrers = await this.segments.referrers(projectId, row.id, manager);
      if (referrers.length > 0) {
        throw ApiException.conflict(
          `Segment ${row.id} is used by the membership rules of ${referrers.map((s) => `"${s.name}" (${s.id})`).join(', ')}`,
          'Remove the membership rules naming this segment from those segments, then delete it.',
        );
      }
      await this.segments.delete(projectId, row.id, manager);
    });
    return { id, deleted: true };
  }

  /**
   * Members, newest first. `total` is the segment's memberCount (fresh
   * within MEMBER_COUNT_TTL_MS), so paging does not recount every time.
   */
  async members(
    projectId: string,
    id: string,
    query: PaginationQueryDto,
  ): Promise<Page<ContactView>> {
    const segment = await this.find(projectId, id);
    const limit = query.limit ?? 20;
    const beforeId = query.cursor ? decodeCursor(query.cursor) : undefined;
    const compiled = await this.conditions.compileBoth(segment.condition, projectId);
    const [rows, total] = await Promise.all([
      this.segments.members(projectId, compiled, limit + 1, beforeId),
      this.freshCount(segment),
    ]);
    return pageOf(rows, limit, total, toContactView, (row) => row.id);
  }

  /** An unsaved condition: live count and the 10 newest matching contacts. */
  async preview(projectId: string, dto: PreviewSegmentDto): Promise<SegmentPreviewView> {
    const condition = await this.conditions.assertValid(dto.condition, {
      projectId,
      path: 'condition',
    });
    const compiled = await this.conditions.compileBoth(condition, projectId);
    const [count, rows] = await Promise.all([
      this.conditions.countCompiled(compiled.count),
      this.segments.members(projectId, compiled, PREVIEW_SAMPLE_SIZE),
    ]);
    return { count, sample: rows.map(toContactView) };
  }

  private async find(projectId: string, id: string, manager?: EntityManager): Promise<Segment> {
    const segment = await this.segments.findOne(projectId, id, manager);
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

  /** The stored count when fresh, otherwise a count now. */
  private async freshCount(segment: Segment): Promise<number> {
    return this.isFresh(segment) ? (segment.memberCount as number) : this.recount(segment);
  }

  /**
   * For lists: a stale count is served while a recount runs in the
   * background, so listing many segments never waits for many counts.
   * A segment never counted is counted now.
   */
  private async listCount(segment: Segment): Promise<number> {
    if (segment.memberCount === null) return this.recount(segment);
    if (!this.isFresh(segment) && !this.refreshing.has(countKey(segment))) {
      this.recount(segment).catch((error: unknown) =>
        this.logger.warn(`Background recount of segment ${segment.id} failed: ${String(error)}`),
      );
    }
    return segment.memberCount;
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
    const condition: ConditionGroup = segment.condition;
    const compiled = await this.conditions.compile(condition, {
      projectId: segment.projectId,
      purpose: 'count',
    });
    const count = await this.conditions.countCompiled(compiled);
    await this.segments.storeCount(segment.id, count, condition);
    return count;
  }

  private toView(segment: Segment, memberCount: number): SegmentView {
    return {
      id: segment.id,
      name: segment.name,
      description: segment.description,
      condition: segment.condition,
      memberCount,
      createdAt: segment.createdAt.toISOString(),
      updatedAt: segment.updatedAt.toISOString(),
    };
  }
}

function countKey(segment: Segment): string {
  return `${segment.id}:${JSON.stringify(segment.condition)}`;
}
