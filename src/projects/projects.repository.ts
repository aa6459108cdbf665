import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { keysetRows } from '../database/keyset-rows';
import { queryRows } from '../database/query-rows';
import { ApiKey } from './api-key.entity';
import {
  Project,
  SendingStatus,
  TrackingDomainRecord,
  TrackingDomainStatus,
} from './project.entity';

/** A project's tracking domain as its checks read it. */
export interface TrackingDomainRow {
  projectId: string;
  domain: string;
  status: TrackingDomainStatus;
  record: TrackingDomainRecord | null;
  setAt: Date;
  checkedAt: Date | null;
}

/** What a check of a tracking domain writes. */
export interface TrackingDomainCheck {
  status: TrackingDomainStatus;
  record: TrackingDomainRecord;
  checkedAt: Date;
}

const TRACKING_DOMAIN_COLUMNS = `id AS "projectId", tracking_domain AS domain, tracking_domain_status AS status,
  tracking_domain_record AS record, tracking_domain_set_at AS "setAt", tracking_domain_checked_at AS "checkedAt"`;

/** The stored fields of a new API key (createdAt is the database's). */
export type NewApiKey = Pick<
  ApiKey,
  'id' | 'projectId' | 'type' | 'prefix' | 'hash' | 'revokedAt' | 'name'
>;

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

  /** The project's tracking domain when it is VERIFIED, else null (by primary key: read per project, cached). */
  async findVerifiedTrackingDomain(manager: EntityManager, id: string): Promise<string | null> {
    const rows = await queryRows<{ domain: string }>(
      manager,
      `SELECT tracking_domain AS domain FROM projects WHERE id = $1 AND tracking_domain_status = 'VERIFIED'`,
      [id],
    );
    return rows[0]?.domain ?? null;
  }

  /** Another project that has `domain` as its VERIFIED tracking domain (the unique index allows one). */
  async verifiedTrackingDomainHolder(
    manager: EntityManager,
    domain: string,
    exceptId: string | null,
  ): Promise<string | null> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT id FROM projects
        WHERE tracking_domain = $1 AND tracking_domain_status = 'VERIFIED' AND id IS DISTINCT FROM $2`,
      [domain, exceptId],
    );
    return rows[0]?.id ?? null;
  }

  async findTrackingDomain(manager: EntityManager, id: string): Promise<TrackingDomainRow | null> {
    const rows = await queryRows<TrackingDomainRow>(
      manager,
      `SELECT ${TRACKING_DOMAIN_COLUMNS} FROM projects WHERE id = $1 AND tracking_domain IS NOT NULL`,
      [id],
    );
    return rows[0] ?? null;
  }

  /**
   * The sweep's tracking domains: every PENDING one, and VERIFIED ones last
   * checked before `dueBefore`; least recently checked first. Disabled
   * projects' wait for their enable.
   */
  findTrackingDomainsDue(
    manager: EntityManager,
    dueBefore: Date,
    limit: number,
  ): Promise<TrackingDomainRow[]> {
    return queryRows<TrackingDomainRow>(
      manager,
      `SELECT ${TRACKING_DOMAIN_COLUMNS} FROM projects
        WHERE enabled AND tracking_domain IS NOT NULL
          AND (tracking_domain_status = 'PENDING'
               OR (tracking_domain_status = 'VERIFIED' AND tracking_domain_checked_at < $1))
        ORDER BY tracking_domain_checked_at NULLS FIRST, id
        LIMIT $2`,
      [dueBefore, limit],
    );
  }

  /**
   * Writes a check's outcome, only while the project still has the domain
   * the check looked at (same name, set at the same time). A background
   * check (`notAfter` set) also leaves alone a row written by a check that
   * started later. True when it wrote.
   */
  async saveTrackingCheck(
    manager: EntityManager,
    checked: Pick<TrackingDomainRow, 'projectId' | 'domain' | 'setAt'>,
    check: TrackingDomainCheck,
    notAfter: Date | null,
  ): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `UPDATE projects
          SET tracking_domain_status = $4, tracking_domain_record = $5, tracking_domain_checked_at = $6,
              updated_at = now()
        WHERE id = $1 AND tracking_domain = $2 AND tracking_domain_set_at = $3
          AND ($7::timestamptz IS NULL OR tracking_domain_checked_at IS NULL
               OR tracking_domain_checked_at <= $7)
        RETURNING id`,
      [
        checked.projectId,
        checked.domain,
        checked.setAt,
        check.status,
        JSON.stringify(check.record),
        check.checkedAt,
        notAfter,
      ],
    );
    return rows.length > 0;
  }

  /** Answers the on-demand TLS question: is `domain` some project's VERIFIED tracking domain. */
  async isVerifiedTrackingDomain(manager: EntityManager, domain: string): Promise<boolean> {
    const rows = await queryRows<{ one: number }>(
      manager,
      `SELECT 1 AS one FROM projects WHERE tracking_domain = $1 AND tracking_domain_status = 'VERIFIED'`,
      [domain],
    );
    return rows.length > 0;
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

  /** One key of one project, or null (another project's key is as absent as an unknown one). */
  findKeyOfProject(manager: EntityManager, projectId: string, id: string): Promise<ApiKey | null> {
    return manager.findOne(ApiKey, { where: { id, projectId } });
  }

  /** How many unrevoked secret keys the project holds. */
  async countActiveSecretKeys(manager: EntityManager, projectId: string): Promise<number> {
    const [row] = await queryRows<{ count: number }>(
      manager,
      `SELECT count(*)::int AS count FROM api_keys
        WHERE project_id = $1 AND type = 'SECRET' AND revoked_at IS NULL`,
      [projectId],
    );
    return row.count;
  }
}
