import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { keysetRows } from '../database/keyset-rows';
import { containsPattern } from '../database/like-pattern';
import { queryRows } from '../database/query-rows';
import { Template, TemplateType } from './template.entity';

/** The stored fields of a new template (id, createdAt and updatedAt are the database's). */
export type NewTemplate = Pick<
  Template,
  | 'id'
  | 'projectId'
  | 'name'
  | 'subject'
  | 'body'
  | 'type'
  | 'fromEmail'
  | 'fromName'
  | 'replyTo'
  | 'track'
>;

export interface TemplateListFilter {
  type?: TemplateType;
  /** Case-insensitive substring of the name. */
  search?: string;
}

/** Every statement on `templates`. */
@Injectable()
export class TemplatesRepository {
  async insert(manager: EntityManager, fields: NewTemplate): Promise<Template> {
    return manager.save(manager.create(Template, fields));
  }

  /** GET /templates: newest first, keyset after `afterId`, exact total under the same filters. */
  list(
    manager: EntityManager,
    projectId: string,
    filter: TemplateListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: Template[]; total: number }> {
    const qb = manager
      .createQueryBuilder(Template, 't')
      .where('t.project_id = :projectId', { projectId });
    if (filter.type) qb.andWhere('t.type = :type', { type: filter.type });
    if (filter.search) {
      qb.andWhere('t.name ILIKE :search', { search: containsPattern(filter.search) });
    }
    return keysetRows(qb, 't.id', afterId, limit);
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<Template | null> {
    return manager.findOne(Template, { where: { id, projectId } });
  }

  /** The row, locked until the transaction ends: a PATCH cannot write back a row deleted meanwhile. */
  lockById(manager: EntityManager, projectId: string, id: string): Promise<Template | null> {
    return manager.findOne(Template, {
      where: { id, projectId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  /** Writes a loaded (and locked) row back; answers it with the new updatedAt. */
  update(manager: EntityManager, row: Template): Promise<Template> {
    return manager.save(row);
  }

  /**
   * One statement, so of concurrent deletes of one template exactly one sees
   * the row (the others wait on its lock, then find nothing): true for it alone.
   */
  async delete(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      'DELETE FROM templates WHERE project_id = $1 AND id = $2 RETURNING id',
      [projectId, id],
    );
    return rows.length > 0;
  }
}
