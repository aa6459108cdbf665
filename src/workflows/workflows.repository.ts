import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../database/id';
import { keysetRows } from '../database/keyset-rows';
import { containsPattern } from '../database/like-pattern';
import { queryRows } from '../database/query-rows';
import { Workflow, WorkflowTriggerType } from './workflow.entity';

export interface WorkflowListFilter {
  enabled?: boolean;
  search?: string;
}

/** Every statement on workflow definitions (the workflows table). */
@Injectable()
export class WorkflowsRepository {
  async insert(manager: EntityManager, fields: Partial<Workflow>): Promise<Workflow> {
    const id = fields.id ?? newId();
    await manager
      .createQueryBuilder()
      .insert()
      .into(Workflow)
      .values({ ...fields, id } as never)
      .updateEntity(false)
      .execute();
    return (await this.findById(manager, fields.projectId as string, id)) as Workflow;
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<Workflow | null> {
    return manager
      .createQueryBuilder(Workflow, 'w')
      .where('w.id = :id AND w.project_id = :projectId AND w.deleted_at IS NULL', { id, projectId })
      .getOne();
  }

  lockById(manager: EntityManager, projectId: string, id: string): Promise<Workflow | null> {
    return manager
      .createQueryBuilder(Workflow, 'w')
      .setLock('pessimistic_write')
      .where('w.id = :id AND w.project_id = :projectId AND w.deleted_at IS NULL', { id, projectId })
      .getOne();
  }

  /** The engine's read: deleted ones too (their executions were cancelled in the delete's transaction). */
  findForEngine(manager: EntityManager, id: string): Promise<Workflow | null> {
    return manager.createQueryBuilder(Workflow, 'w').where('w.id = :id', { id }).getOne();
  }

  async update(manager: EntityManager, id: string, fields: Partial<Workflow>): Promise<void> {
    await manager
      .createQueryBuilder()
      .update(Workflow)
      .set({ ...fields, updatedAt: () => 'now()' } as never)
      .where('id = :id', { id })
      .execute();
  }

  async softDelete(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `UPDATE workflows SET deleted_at = now(), enabled = false, trigger_segment_id = NULL, trigger_name = NULL, updated_at = now()
        WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL RETURNING id`,
      [id, projectId],
    );
    return rows.length > 0;
  }

  list(
    manager: EntityManager,
    projectId: string,
    filter: WorkflowListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: Workflow[]; total: number }> {
    const qb = manager
      .createQueryBuilder(Workflow, 'w')
      .where('w.project_id = :projectId AND w.deleted_at IS NULL', { projectId });
    if (filter.enabled !== undefined)
      qb.andWhere('w.enabled = :enabled', { enabled: filter.enabled });
    if (filter.search)
      qb.andWhere('w.name ILIKE :search', { search: containsPattern(filter.search) });
    return keysetRows(qb, 'w.id', afterId, limit);
  }

  /**
   * The event names that can move an execution of each project's workflows
   * (the events trigger's two joins): enabled workflows' trigger names, and
   * the events WAIT_FOR_EVENT steps of any workflow not deleted wait for.
   * Projects without workflows are absent.
   */
  async movingNames(manager: EntityManager, projectIds: string[]): Promise<Map<string, string[]>> {
    const rows = await queryRows<{ projectId: string; names: string[] }>(
      manager,
      `SELECT w.project_id AS "projectId",
              array_remove(array_agg(DISTINCT w.trigger_name) FILTER (WHERE w.enabled), NULL)
                || COALESCE(array_agg(DISTINCT e.name) FILTER (WHERE e.name IS NOT NULL), '{}') AS names
         FROM workflows w
         LEFT JOIN LATERAL (
           SELECT jsonb_path_query(w.steps, 'strict $.** ? (@.type == "WAIT_FOR_EVENT").event') #>> '{}' AS name) e ON true
        WHERE w.project_id = ANY($1::uuid[]) AND w.deleted_at IS NULL
        GROUP BY w.project_id`,
      [projectIds],
    );
    return new Map(rows.map((r) => [r.projectId, r.names]));
  }

  /** Segments whose membership enabled workflows of the project need (SEGMENT_ENTRY/EXIT triggers). */
  async keptSegments(manager: EntityManager, projectId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT DISTINCT trigger_segment_id AS id FROM workflows
        WHERE project_id = $1 AND enabled AND deleted_at IS NULL AND trigger_segment_id IS NOT NULL
          AND trigger_type IN ('${WorkflowTriggerType.SEGMENT_ENTRY}', '${WorkflowTriggerType.SEGMENT_EXIT}')`,
      [projectId],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Whether a segment of the project exists (the trigger's check). Segments
   * are another feature's table: this read is the one exception, made in the
   * workflow's transaction.
   */
  async segmentExists(
    manager: EntityManager,
    projectId: string,
    segmentId: string,
  ): Promise<boolean> {
    const rows = await queryRows(
      manager,
      `SELECT 1 FROM segments WHERE id = $1 AND project_id = $2`,
      [segmentId, projectId],
    );
    return rows.length > 0;
  }

  /** Workflows (not deleted) whose trigger names this segment. */
  async countUsingSegment(manager: EntityManager, segmentId: string): Promise<number> {
    const rows = await queryRows<{ n: number }>(
      manager,
      `SELECT count(*)::int AS n FROM workflows WHERE trigger_segment_id = $1 AND deleted_at IS NULL`,
      [segmentId],
    );
    return rows[0].n;
  }
}
