import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../database/id';
import type { DataPatch } from './contact-data';
import type { ContactRow } from './contact.view';
import { queryRows } from '../database/query-rows';

/** Columns of `contacts` under the names of ContactRow. */
const ROW_FIELDS = [
  'id',
  'project_id AS "projectId"',
  'email',
  'subscribed',
  'suppressed',
  'data',
  'created_at AS "createdAt"',
  'updated_at AS "updatedAt"',
];

export const CONTACT_COLUMNS = ROW_FIELDS.map((field) => `c.${field}`).join(', ');

/** Unqualified: fits statements on `contacts` with or without the alias `c`. */
const RETURNING_CONTACT = `RETURNING ${ROW_FIELDS.join(', ')}`;

/**
 * Merges a data patch into the stored object: top-level keys of `set` win,
 * keys in `remove` go. `$data` and `$remove` are parameter placeholders.
 */
function mergedData(column: string, data: string, remove: string): string {
  return `(${column} || ${data}::jsonb) - ${remove}::text[]`;
}

/**
 * The new emails of an import chunk: $1 project id, $2 a JSON array of
 * {id, email, subscribed, data}; answers the emails it inserted. Exported for
 * the baseline of bench/import.js, which times this very statement.
 */
export const BULK_INSERT_NEW_CONTACTS = `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
  SELECT r.id, $1, r.email, COALESCE(r.subscribed, true), false, r.data, now(), now()
  FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, email text, subscribed boolean, data jsonb)
  ORDER BY r.email COLLATE "C"
  ON CONFLICT (project_id, email) DO NOTHING
  RETURNING email`;

export interface ContactListFilter {
  subscribed?: boolean;
  /** Normalised exact address. */
  email?: string;
  /** Case-insensitive substring of the address. */
  search?: string;
}

/** One input row of a bulk upsert (already validated and normalised). */
export interface BulkContactInput {
  email: string;
  subscribed: boolean | null;
  set: Record<string, unknown>;
  remove: string[];
}

/** Every SQL statement that writes or reads contacts lives here. */
@Injectable()
export class ContactsRepository {
  /**
   * The race-free create-or-update: one statement, so two concurrent calls for
   * a new email create one row (the loser takes the DO UPDATE branch). Leaves
   * `subscribed` of an existing row alone; see setSubscribed.
   */
  async upsert(
    manager: EntityManager,
    projectId: string,
    email: string,
    subscribedIfNew: boolean,
    patch: DataPatch,
  ): Promise<{ row: ContactRow; created: boolean }> {
    const rows = await queryRows<ContactRow & { created: boolean }>(
      manager,
      `INSERT INTO contacts AS c (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
       VALUES ($1, $2, $3, $4, false, $5::jsonb, now(), now())
       ON CONFLICT (project_id, email) DO UPDATE
         SET data = ${mergedData('c.data', '$5', '$6')}, updated_at = now()
       ${RETURNING_CONTACT}, (xmax = 0) AS created`,
      [newId(), projectId, email, subscribedIfNew, JSON.stringify(patch.set), patch.remove],
    );
    const { created, ...row } = rows[0];
    return { row, created };
  }

  async setSubscribed(
    manager: EntityManager,
    projectId: string,
    id: string,
    subscribed: boolean,
  ): Promise<ContactRow> {
    const rows = await queryRows<ContactRow>(
      manager,
      `UPDATE contacts SET subscribed = $3, updated_at = now() WHERE project_id = $1 AND id = $2 ${RETURNING_CONTACT}`,
      [projectId, id, subscribed],
    );
    return rows[0];
  }

  /**
   * A hard bounce: suppressed and unsubscribed. The row only when that changed
   * something (null: already both, or no such contact).
   */
  async suppress(manager: EntityManager, projectId: string, id: string): Promise<ContactRow | null> {
    const rows = await queryRows<ContactRow>(
      manager,
      `UPDATE contacts SET suppressed = true, subscribed = false, updated_at = now()
        WHERE project_id = $1 AND id = $2 AND (NOT suppressed OR subscribed) ${RETURNING_CONTACT}`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  /**
   * subscribed → false. The row only when it was subscribed: concurrent calls
   * serialise on the row lock and exactly one of them sees the change.
   */
  async unsubscribeIfSubscribed(manager: EntityManager, projectId: string, id: string): Promise<ContactRow | null> {
    const rows = await queryRows<ContactRow>(
      manager,
      `UPDATE contacts SET subscribed = false, updated_at = now()
        WHERE project_id = $1 AND id = $2 AND subscribed ${RETURNING_CONTACT}`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  /** Plain insert for POST /contacts; a duplicate surfaces as unique_violation (23505). */
  async insert(
    manager: EntityManager,
    projectId: string,
    email: string,
    subscribed: boolean,
    data: Record<string, unknown>,
  ): Promise<ContactRow> {
    const rows = await queryRows<ContactRow>(
      manager,
      `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
       VALUES ($1, $2, $3, $4, false, $5::jsonb, now(), now()) ${RETURNING_CONTACT}`,
      [newId(), projectId, email, subscribed, JSON.stringify(data)],
    );
    return rows[0];
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<ContactRow | null> {
    return this.selectOne(manager, 'c.project_id = $1 AND c.id = $2', [projectId, id]);
  }

  /** The row, locked until the transaction ends (PATCH compares the old subscription state). */
  lockById(manager: EntityManager, projectId: string, id: string): Promise<ContactRow | null> {
    return this.selectOne(manager, 'c.project_id = $1 AND c.id = $2 FOR UPDATE', [projectId, id]);
  }

  findByEmail(
    manager: EntityManager,
    projectId: string,
    email: string,
  ): Promise<ContactRow | null> {
    return this.selectOne(manager, 'c.project_id = $1 AND c.email = $2', [projectId, email]);
  }

  /**
   * GET /contacts: newest first (UUIDv7 id), keyset on the cursor id, exact
   * total under the same filters. Served by (project_id, id),
   * (project_id, subscribed, id), the trigram index for `search` and the
   * unique (project_id, email) for `email`.
   */
  async list(
    manager: EntityManager,
    projectId: string,
    filter: ContactListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: ContactRow[]; total: number }> {
    const params: unknown[] = [projectId];
    const where = ['c.project_id = $1'];
    if (filter.subscribed !== undefined) {
      params.push(filter.subscribed);
      where.push(`c.subscribed = $${params.length}`);
    }
    if (filter.email !== undefined) {
      params.push(filter.email);
      where.push(`c.email = $${params.length}`);
    }
    if (filter.search !== undefined && filter.search !== '') {
      params.push(`%${filter.search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`);
      where.push(`c.email ILIKE $${params.length}`);
    }
    const totalRows = await queryRows<{ total: number }>(
      manager,
      `SELECT count(*)::int AS total FROM contacts c WHERE ${where.join(' AND ')}`,
      params,
    );
    const pageParams = [...params];
    const pageWhere = [...where];
    if (afterId) {
      pageParams.push(afterId);
      pageWhere.push(`c.id < $${pageParams.length}`);
    }
    pageParams.push(limit + 1);
    const rows = await queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE ${pageWhere.join(' AND ')}
       ORDER BY c.id DESC LIMIT $${pageParams.length}`,
      pageParams,
    );
    return { rows, total: totalRows[0].total };
  }

  /** PATCH: merge data and optionally set subscribed, in one statement. */
  async update(
    manager: EntityManager,
    projectId: string,
    id: string,
    subscribed: boolean | undefined,
    patch: DataPatch,
  ): Promise<ContactRow | null> {
    const rows = await queryRows<ContactRow>(
      manager,
      `UPDATE contacts c SET
         subscribed = COALESCE($3, c.subscribed),
         data = ${mergedData('c.data', '$4', '$5')},
         updated_at = now()
       WHERE c.project_id = $1 AND c.id = $2 ${RETURNING_CONTACT}`,
      [projectId, id, subscribed ?? null, JSON.stringify(patch.set), patch.remove],
    );
    return rows[0] ?? null;
  }

  /** Events and email records go with it (ON DELETE CASCADE). */
  async delete(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `DELETE FROM contacts WHERE project_id = $1 AND id = $2 RETURNING id`,
      [projectId, id],
    );
    return rows.length > 0;
  }

  /**
   * Bulk create-or-update of distinct emails, set-based: one INSERT for the new
   * ones (ON CONFLICT DO NOTHING), one UPDATE ... FROM for the rest, each fed by
   * jsonb_to_recordset. A contact created or deleted by someone else between
   * the two statements is simply retried. Each statement takes its row locks
   * in (email COLLATE "C") order, the order of the other multi-contact
   * writers (track batches, sends), so two imports cannot deadlock on
   * contacts. (A track batch can still meet an import chunk in the gap
   * between its two passes; the batch's lock_timeout makes it step aside.)
   * Returns how many rows were created and updated.
   */
  async bulkUpsert(
    manager: EntityManager,
    projectId: string,
    inputs: BulkContactInput[],
  ): Promise<{ created: number; updated: number }> {
    let pending = [...inputs].sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
    let created = 0;
    let updated = 0;
    for (let attempt = 0; pending.length > 0 && attempt < 5; attempt++) {
      const payload = JSON.stringify(
        pending.map((r) => ({
          id: newId(),
          email: r.email,
          subscribed: r.subscribed,
          data: r.set,
          remove: r.remove,
        })),
      );
      const inserted = await queryRows<{ email: string }>(manager, BULK_INSERT_NEW_CONTACTS, [
        projectId,
        payload,
      ]);
      created += inserted.length;
      const insertedSet = new Set(inserted.map((r) => r.email));
      const existing = pending.filter((r) => !insertedSet.has(r.email));
      if (existing.length === 0) break;
      const changed = await queryRows<{ email: string }>(
        manager,
        `WITH r AS (
           SELECT x.email, x.subscribed, x.data, ARRAY(SELECT jsonb_array_elements_text(x.remove)) AS remove
           FROM jsonb_to_recordset($2::jsonb) AS x(email text, subscribed boolean, data jsonb, remove jsonb)
         ), locked AS (
           SELECT c.id, r.subscribed, r.data, r.remove FROM contacts c JOIN r ON c.email = r.email
           WHERE c.project_id = $1
           ORDER BY c.email COLLATE "C"
           FOR NO KEY UPDATE OF c
         )
         UPDATE contacts c SET
           subscribed = COALESCE(l.subscribed, c.subscribed),
           data = (c.data || l.data) - l.remove,
           updated_at = now()
         FROM locked l
         WHERE c.id = l.id
         RETURNING c.email`,
        [
          projectId,
          JSON.stringify(
            existing.map((r) => ({
              email: r.email,
              subscribed: r.subscribed,
              data: r.set,
              remove: r.remove,
            })),
          ),
        ],
      );
      updated += changed.length;
      const changedSet = new Set(changed.map((r) => r.email));
      pending = existing.filter((r) => !changedSet.has(r.email));
    }
    return { created, updated };
  }

  /** One contact by a condition on `contacts c` (anything after WHERE), or null. */
  private async selectOne(
    manager: EntityManager,
    condition: string,
    params: unknown[],
  ): Promise<ContactRow | null> {
    const rows = await queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE ${condition}`,
      params,
    );
    return rows[0] ?? null;
  }
}
