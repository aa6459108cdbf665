import { Injectable } from '@nestjs/common';
import { Brackets, type EntityManager } from 'typeorm';
import { keysetRows } from '../database/keyset-rows';
import { queryRows } from '../database/query-rows';
import {
  DnsRecordStatus,
  Domain,
  DomainStatus,
  RecordProblems,
  RecordStatuses,
} from './domain.entity';

/** The stored fields of a new domain (createdAt and updatedAt are the database's). */
export type NewDomain = Omit<Domain, 'createdAt' | 'updatedAt' | 'project' | 'assignId'>;

/** What the sender check reads of a domain: its state and its sealed signing key. */
export interface SenderRow {
  id: string;
  domain: string;
  status: DomainStatus;
  dkim_selector: string;
  dkim_private_key_sealed: Buffer;
  /** The RETURN_PATH record's status at the last check; null when never checked. */
  return_path_status: DnsRecordStatus | null;
}

/**
 * The sender check's read made inside another statement (the delivery
 * claim): the domain it looked up and the row it found there.
 */
export interface SenderRead {
  /** The address's domain part as the statement took it (lower-cased, no IDNA); null without one. */
  lookup: string | null;
  row: SenderRow | null;
}

/** The columns senderJoin adds to a statement's rows. */
export interface SenderReadColumns {
  senderLookup: string | null;
  senderId: string | null;
  senderDomain: string | null;
  senderStatus: DomainStatus | null;
  senderSelector: string | null;
  senderKeySealed: Buffer | null;
  senderReturnPath: DnsRecordStatus | null;
}

/** The RETURN_PATH record's status, from the per-record statuses of the last check. */
const RETURN_PATH_STATUS_SQL = (alias: string) => `${alias}.record_statuses->>'RETURN_PATH'`;

/**
 * The sender check's read as part of another statement, so a delivery reads
 * its email and its sender domain in one round trip: a LEFT JOIN of
 * `domains` by (project, the address's domain part) on the unique index, and
 * the columns it adds (senderReadOf turns them back into a SenderRead). Read
 * in that statement, so as fresh as findSender: a deleted or FAILED domain
 * stops the next message. The domain part is taken in SQL without IDNA, so it
 * is only a candidate: DomainsService.assertCanSend trusts the read only when
 * `lookup` equals senderDomainOf(address), and runs findSender otherwise.
 */
export function senderJoin(
  projectIdSql: string,
  addressSql: string,
): { join: string; columns: string } {
  const lookup = `lower(substring(${addressSql} FROM '@([^@]*)$'))`;
  return {
    join: `LEFT JOIN domains sd ON sd.project_id = ${projectIdSql} AND sd.domain = ${lookup}`,
    columns: `${lookup} AS "senderLookup", sd.id AS "senderId", sd.domain AS "senderDomain", sd.status AS "senderStatus",
              sd.dkim_selector AS "senderSelector", sd.dkim_private_key_sealed AS "senderKeySealed",
              ${RETURN_PATH_STATUS_SQL('sd')} AS "senderReturnPath"`,
  };
}

export function senderReadOf(row: SenderReadColumns): SenderRead {
  return {
    lookup: row.senderLookup,
    row:
      row.senderId === null
        ? null
        : {
            id: row.senderId,
            domain: row.senderDomain as string,
            status: row.senderStatus as DomainStatus,
            dkim_selector: row.senderSelector as string,
            dkim_private_key_sealed: row.senderKeySealed as Buffer,
            return_path_status: row.senderReturnPath,
          },
  };
}

/** A domain's sealed DKIM key with what names it in messages (never the key itself). */
export interface SealedKeyRow {
  id: string;
  domain: string;
  dkim_private_key_sealed: Buffer;
}

/** What a DNS check writes. */
export interface DomainCheckFields {
  status: DomainStatus;
  recordStatuses: RecordStatuses;
  recordProblems: RecordProblems;
  lastCheckedAt: Date;
  verifiedAt: Date | null;
}

/**
 * Every statement on `domains`. The sealed key column is left out of entity
 * reads (select: false): only the sender check and the sealed-key statements
 * read it, by name.
 */
@Injectable()
export class DomainsRepository {
  exists(manager: EntityManager, projectId: string, domain: string): Promise<boolean> {
    return manager.exists(Domain, { where: { projectId, domain } });
  }

  /** A duplicate (project_id, domain) surfaces as unique_violation (23505). */
  async insert(manager: EntityManager, fields: NewDomain): Promise<Domain> {
    const row = manager.create(Domain, fields);
    await manager.insert(Domain, row);
    return row;
  }

  /** GET /domains: newest first, keyset after `afterId`, exact total under the same filter. */
  list(
    manager: EntityManager,
    projectId: string,
    filter: { status?: DomainStatus },
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: Domain[]; total: number }> {
    const qb = manager
      .createQueryBuilder(Domain, 'd')
      .where('d.project_id = :projectId', { projectId });
    if (filter.status) qb.andWhere('d.status = :status', { status: filter.status });
    return keysetRows(qb, 'd.id', afterId, limit);
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<Domain | null> {
    return manager.findOne(Domain, { where: { id, projectId } });
  }

  /** By id alone: a background check's job carries the domain id only. */
  reload(manager: EntityManager, id: string): Promise<Domain | null> {
    return manager.findOne(Domain, { where: { id } });
  }

  /** One statement: of concurrent deletes of one domain, exactly one answers true. */
  async delete(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      'DELETE FROM domains WHERE project_id = $1 AND id = $2 RETURNING id',
      [projectId, id],
    );
    return rows.length > 0;
  }

  /**
   * The sender check's read, by the unique (project_id, domain) index. Plain
   * SQL on purpose: it runs for every message, and building and hydrating
   * through the query builder cost several times the round trip itself
   * (bench/domains-sender-check.js).
   */
  async findSender(
    manager: EntityManager,
    projectId: string,
    domain: string,
  ): Promise<SenderRow | null> {
    const rows = await queryRows<SenderRow>(
      manager,
      `SELECT id, domain, status, dkim_selector, dkim_private_key_sealed,
              ${RETURN_PATH_STATUS_SQL('domains')} AS return_path_status
         FROM domains WHERE project_id = $1 AND domain = $2`,
      [projectId, domain],
    );
    return rows[0] ?? null;
  }

  /**
   * Writes a check's result. With `startedAt`, only when no check that
   * started later has written meanwhile (a background check must not
   * overwrite a fresher answer with older DNS data). False when it did not write.
   */
  /**
   * The project's VERIFIED sending domain that is `name` or a parent of it
   * (null when none): a tracking domain must be under one, because a CNAME
   * proves only that a name points here, not who owns it.
   */
  async verifiedParentOf(
    manager: EntityManager,
    projectId: string,
    name: string,
  ): Promise<string | null> {
    const rows = await queryRows<{ domain: string }>(
      manager,
      `SELECT domain FROM domains
        WHERE project_id = $1 AND status = 'VERIFIED'
          AND ($2 = domain OR right($2, length(domain) + 1) = '.' || domain)
        LIMIT 1`,
      [projectId, name],
    );
    return rows[0]?.domain ?? null;
  }

  /** The domain's status under a row lock (null when deleted): checks that overlap take turns here. */
  async lockStatus(manager: EntityManager, id: string): Promise<DomainStatus | null> {
    const rows: { status: DomainStatus }[] = await manager.query(
      'SELECT status FROM domains WHERE id = $1 FOR UPDATE',
      [id],
    );
    return rows[0]?.status ?? null;
  }

  async saveCheck(
    manager: EntityManager,
    id: string,
    fields: DomainCheckFields,
    startedAt: Date | null,
  ): Promise<boolean> {
    const update = manager
      .createQueryBuilder()
      .update(Domain)
      .set(fields)
      .where('id = :id', { id });
    if (startedAt)
      update.andWhere('(last_checked_at IS NULL OR last_checked_at < :startedAt)', { startedAt });
    const written = await update.execute();
    return !!written.affected;
  }

  /**
   * The sweep's batch: every PENDING domain, and VERIFIED ones last checked
   * at or before `verifiedDueBefore`; least recently checked first, so a
   * backlog larger than one batch rotates. FAILED domains are not swept.
   */
  findDueForCheck(
    manager: EntityManager,
    verifiedDueBefore: Date,
    limit: number,
  ): Promise<Domain[]> {
    return manager
      .createQueryBuilder(Domain, 'd')
      .where('d.status = :pending', { pending: DomainStatus.PENDING })
      .orWhere(
        new Brackets((qb) =>
          qb
            .where('d.status = :verified', { verified: DomainStatus.VERIFIED })
            .andWhere('(d.last_checked_at IS NULL OR d.last_checked_at <= :dueBefore)', {
              dueBefore: verifiedDueBefore,
            }),
        ),
      )
      .orderBy('d.last_checked_at', 'ASC', 'NULLS FIRST')
      .addOrderBy('d.id', 'ASC')
      .take(limit)
      .getMany();
  }

  /**
   * Sealed keys of every project, in id order after `afterId` (keyset, so no
   * row is skipped or seen twice); `lock` holds them until the transaction ends.
   */
  sealedKeysPage(
    manager: EntityManager,
    afterId: string | null,
    limit: number,
    lock: boolean,
  ): Promise<SealedKeyRow[]> {
    return queryRows<SealedKeyRow>(
      manager,
      `SELECT id, domain, dkim_private_key_sealed FROM domains
       WHERE $1::uuid IS NULL OR id > $1::uuid ORDER BY id LIMIT $2 ${lock ? 'FOR UPDATE' : ''}`,
      [afterId, limit],
    );
  }

  /** Replaces sealed keys, `sealed[i]` for `ids[i]`, in one statement. */
  async replaceSealedKeys(manager: EntityManager, ids: string[], sealed: Buffer[]): Promise<void> {
    await queryRows(
      manager,
      `UPDATE domains d SET dkim_private_key_sealed = v.sealed
       FROM unnest($1::uuid[], $2::bytea[]) AS v(id, sealed) WHERE d.id = v.id`,
      [ids, sealed],
    );
  }
}
