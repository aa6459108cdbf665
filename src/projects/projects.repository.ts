import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { keysetRows } from '../database/keyset-rows';
import { queryRows } from '../database/query-rows';
import { ApiKey } from './api-key.entity';
import { Project, SendingStatus } from './project.entity';

/** The stored fields of a new API key (createdAt is the database's). */
export type NewApiKey = Pick<ApiKey, 'id' | 'projectId' | 'type' | 'prefix' | 'hash' | 'revokedAt'>;

/**
 * Every statement on projects and their API keys (one aggregate: a project
 * is created with its keys, and a key never changes project). The per-request
 * key lookup is authentication's own (common/auth/api-key-authenticator.ts).
 */
@Injectable()
export class ProjectsRepository {
  async insert(
    manager: EntityManager,
    fields: Pick<Project, 'id' | 'name' | 'enabled'>,
  ): Promise<Project> {
    return manager.save(manager.create(Project, fields));
  }

  /** Every project, newest first (the CLI's listing; a deployment holds a handful). */
  listAll(manager: EntityManager): Promise<Project[]> {
    return manager.find(Project, { order: { id: 'DESC' } });
  }

  /** The ids of the disabled projects (few: the table is read whole, every second, by each worker). */
  async disabledIds(manager: EntityManager): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      'SELECT id FROM projects WHERE NOT enabled',
    );
    return rows.map((row) => row.id);
  }

  /** The project's sender health status (null: no such project). Plain SQL: marketing sends read it. */
  async findSendingStatus(manager: EntityManager, id: string): Promise<SendingStatus | null> {
    const rows = await queryRows<{ status: SendingStatus }>(
      manager,
      'SELECT sending_status AS status FROM projects WHERE id = $1',
      [id],
    );
    return rows[0]?.status ?? null;
  }

  /** Writes the sender health fields of a locked row. */
  async setSendingHealth(
    manager: EntityManager,
    id: string,
    fields: Pick<Project, 'sendingStatus' | 'sendingReason' | 'sendingPausedAt'> &
      Partial<Pick<Project, 'sendingWindowFrom'>>,
  ): Promise<void> {
    await manager.update(Project, { id }, fields);
  }

  findById(manager: EntityManager, id: string): Promise<Project | null> {
    return manager.findOne(Project, { where: { id } });
  }

  /** The row, locked until the transaction ends: changes are read-modify-write. */
  lockById(manager: EntityManager, id: string): Promise<Project | null> {
    return manager.findOne(Project, { where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Writes a loaded (and locked) row back; answers it with the new updatedAt. */
  update(manager: EntityManager, row: Project): Promise<Project> {
    return manager.save(row);
  }

  /**
   * The default sender's two columns by primary key. Plain SQL: every send
   * that names no sender reads it.
   */
  async findDefaultSender(
    manager: EntityManager,
    projectId: string,
  ): Promise<{ email: string | null; name: string | null } | null> {
    const rows = await queryRows<{ email: string | null; name: string | null }>(
      manager,
      'SELECT default_from_email AS email, default_from_name AS name FROM projects WHERE id = $1',
      [projectId],
    );
    return rows[0] ?? null;
  }

  async insertKeys(manager: EntityManager, keys: NewApiKey[]): Promise<ApiKey[]> {
    return manager.save(keys.map((fields) => manager.create(ApiKey, fields)));
  }

  /** GET /project/keys: newest first, keyset after `afterId`, exact total. */
  listKeys(
    manager: EntityManager,
    projectId: string,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: ApiKey[]; total: number }> {
    const qb = manager
      .createQueryBuilder(ApiKey, 'k')
      .where('k.project_id = :projectId', { projectId });
    return keysetRows(qb, 'k.id', afterId, limit);
  }

  /** Every key of a project, newest first (the CLI's listing). */
  keysOf(manager: EntityManager, projectId: string): Promise<ApiKey[]> {
    return manager.find(ApiKey, { where: { projectId }, order: { id: 'DESC' } });
  }

  /**
   * Revokes a key; a key revoked before keeps its first revocation time.
   * The key as it now is, or null when there is no such key.
   */
  async revokeKey(manager: EntityManager, id: string): Promise<ApiKey | null> {
    await manager
      .createQueryBuilder()
      .update(ApiKey)
      .set({ revokedAt: () => 'COALESCE(revoked_at, now())' })
      .where('id = :id', { id })
      .execute();
    return manager.findOne(ApiKey, { where: { id } });
  }
}
