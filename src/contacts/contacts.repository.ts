import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { cappedTotal, type ListTotal } from '../database/capped-count';
import { newId } from '../database/id';
import { containsPattern } from '../database/like-pattern';
import { microsOf, timeOfMicros } from '../database/micros';
import { queryRows } from '../database/query-rows';
import type { DataPatch } from './contact-data';
import { SuppressionReason } from './contact.entity';

/** A suppressed contact as GET /suppressions lists it. */
export interface SuppressedContact {
  id: string;
  email: string;
  reason: SuppressionReason | null;
  suppressedAt: Date | null;
  subscribed: boolean;
}
import { CONTACT_COLUMNS, CONTACT_ROW_FIELDS, type ContactRow } from './contact.row';
import { contactUpsertInput, type ContactUpsert } from './contact-upsert';

/** Unqualified: fits statements on `contacts` with or without the alias `c`. */
const RETURNING_CONTACT = `RETURNING ${CONTACT_ROW_FIELDS}`;

/**
 * An import chunk's contacts, $1 the JSON array of ContactUpsertInput: one
 * set-based statement, how many it created and how many it wrote in all.
 * Exported for the baseline of bench/import.js, which times this very statement.
 */
export const UPSERT_CONTACTS_COUNTED = `SELECT count(*) FILTER (WHERE created)::int AS created, count(*)::int AS written
  FROM upsert_contacts($1::jsonb)`;

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

/**
 * Every SQL statement that writes or reads contacts lives here. Creating or
 * updating by email goes through the SQL function `upsert_contacts`
 * (migration ContactUpsertRule), the one definition of that rule, which
 * track batches use too.
 */
@Injectable()
export class ContactsRepository {
  /**
   * The race-free create-or-update of one contact: one INSERT ... ON CONFLICT
   * (project_id, email) DO UPDATE, so two concurrent calls for a new email
   * create one row (the loser takes the DO UPDATE branch).
   */
  async upsert(
    manager: EntityManager,
    upsert: ContactUpsert,
  ): Promise<{ row: ContactRow; created: boolean }> {
    const rows = await queryRows<ContactRow & { created: boolean }>(
      manager,
      `SELECT ${CONTACT_ROW_FIELDS}, created FROM upsert_contacts($1::jsonb)`,
      [JSON.stringify([contactUpsertInput(0, upsert)])],
    );
    const { created, ...row } = rows[0];
    return { row, created };
  }

  /**
   * Each address's contact as `upsert_contacts` would leave it, computed with the same
   * merge_contact_data and without locks or writes; `id` is null for an address with no contact.
   */
  expectedUpserts(
    manager: EntityManager,
    projectId: string,
    emails: string[],
    patch: DataPatch,
    subscribed: boolean | null,
    subscribedIfNew: boolean,
  ): Promise<Array<Omit<ContactRow, 'id'> & { id: string | null }>> {
    return queryRows(
      manager,
      `SELECT c.id, $1::uuid AS "projectId", e.email,
              COALESCE($4::boolean, c.subscribed, $5::boolean) AS subscribed,
              COALESCE(c.suppressed, false) AS suppressed,
              merge_contact_data(COALESCE(c.data, '{}'::jsonb), $3::jsonb, $6::text[]) AS data,
              c.created_at AS "createdAt", c.updated_at AS "updatedAt"
         FROM unnest($2::text[]) AS e(email)
         LEFT JOIN contacts c ON c.project_id = $1 AND c.email = e.email`,
      [projectId, emails, JSON.stringify(patch.set), subscribed, subscribedIfNew, patch.remove],
    );
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
   * Suppressed and unsubscribed, with why and since when (a complaint
   * outranks an earlier bounce as the reason; the time stays the first). The
   * row only when that changed something (null: already so, or no such contact).
   */
  async suppress(
    manager: EntityManager,
    projectId: string,
    id: string,
    reason: SuppressionReason,
  ): Promise<ContactRow | null> {
    const rows = await queryRows<ContactRow>(
      manager,
      `UPDATE contacts SET suppressed = true, subscribed = false,
              suppressed_reason = CASE WHEN suppressed AND suppressed_reason = 'complaint' THEN suppressed_reason
                                       ELSE $3::suppression_reason END,
              suppressed_at = CASE WHEN suppressed THEN COALESCE(suppressed_at, now()) ELSE now() END,
              updated_at = now()
        WHERE project_id = $1 AND id = $2
          AND (NOT suppressed OR subscribed
               OR ($3 = 'complaint' AND suppressed_reason IS DISTINCT FROM 'complaint')) ${RETURNING_CONTACT}`,
      [projectId, id, reason],
    );
    return rows[0] ?? null;
  }

  /** suppress for several contacts of one reason in one statement (an inbound batch); answers the ids it changed. */
  async suppressMany(
    manager: EntityManager,
    contacts: Array<{ projectId: string; id: string }>,
    reason: SuppressionReason,
  ): Promise<Set<string>> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `UPDATE contacts c SET suppressed = true, subscribed = false,
              suppressed_reason = CASE WHEN c.suppressed AND c.suppressed_reason = 'complaint' THEN c.suppressed_reason
                                       ELSE $3::suppression_reason END,
              suppressed_at = CASE WHEN c.suppressed THEN COALESCE(c.suppressed_at, now()) ELSE now() END,
              updated_at = now()
         FROM unnest($1::uuid[], $2::uuid[]) AS s(project_id, id)
        WHERE c.project_id = s.project_id AND c.id = s.id
          AND (NOT c.suppressed OR c.subscribed
               OR ($3 = 'complaint' AND c.suppressed_reason IS DISTINCT FROM 'complaint'))
       RETURNING c.id`,
      [contacts.map((c) => c.projectId), contacts.map((c) => c.id), reason],
    );
    return new Set(rows.map((row) => row.id));
  }

  /** Lifts a suppression (the contact stays unsubscribed); false when it was not suppressed. */
  async unsuppress(manager: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `UPDATE contacts SET suppressed = false, suppressed_reason = NULL, suppressed_at = NULL, updated_at = now()
        WHERE project_id = $1 AND id = $2 AND suppressed RETURNING id`,
      [projectId, id],
    );
    return rows.length > 0;
  }

  async findSuppressed(
    manager: EntityManager,
    projectId: string,
    id: string,
  ): Promise<SuppressedContact | null> {
    const rows = await queryRows<SuppressedContact>(
      manager,
      `SELECT id, email, suppressed_reason AS reason, suppressed_at AS "suppressedAt", subscribed FROM contacts
        WHERE project_id = $1 AND id = $2 AND suppressed`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  /**
   * GET /suppressions: suppressed contacts, newest suppression first (then id),
   * keyset after `after` (the partial index on suppressed). `micros` is the
   * cursor's time as text, never through a JS Date (microsecond precision).
   */
  async listSuppressed(
    manager: EntityManager,
    projectId: string,
    reason: SuppressionReason | undefined,
    after: { micros: string; id: string } | null,
    limit: number,
  ): Promise<{ rows: (SuppressedContact & { micros: string })[]; total: number }> {
    const params: unknown[] = [projectId, reason ?? null];
    const where = `project_id = $1 AND suppressed AND ($2::suppression_reason IS NULL OR suppressed_reason = $2)`;
    const [{ total }] = await queryRows<{ total: number }>(
      manager,
      `SELECT count(*)::int AS total FROM contacts WHERE ${where}`,
      params,
    );
    const rows = await queryRows<SuppressedContact & { micros: string }>(
      manager,
      `SELECT id, email, suppressed_reason AS reason, suppressed_at AS "suppressedAt", subscribed,
              ${microsOf('suppressed_at')} AS micros
         FROM contacts
        WHERE ${where}
          AND ($3::text IS NULL OR (suppressed_at, id) < (${timeOfMicros('$3')}, $4::uuid))
        ORDER BY suppressed_at DESC, id DESC LIMIT $5`,
      [...params, after?.micros ?? null, after?.id ?? null, limit + 1],
    );
    return { rows, total };
  }

  /**
   * subscribed → false. The row only when it was subscribed: concurrent calls
   * serialise on the row lock and exactly one of them sees the change.
   */
  async unsubscribeIfSubscribed(
    manager: EntityManager,
    projectId: string,
    id: string,
  ): Promise<ContactRow | null> {
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

  /** Rows of the project among these ids (any order). */
  findByIds(manager: EntityManager, projectId: string, ids: string[]): Promise<ContactRow[]> {
    return queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.project_id = $1 AND c.id = ANY($2::uuid[])`,
      [projectId, ids],
    );
  }

  /** Rows of the project among these ids, locked in id order until the transaction ends (an update compares the old subscription state). */
  lockByIds(manager: EntityManager, projectId: string, ids: string[]): Promise<ContactRow[]> {
    return queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.project_id = $1 AND c.id = ANY($2::uuid[]) ORDER BY c.id FOR UPDATE`,
      [projectId, ids],
    );
  }

  findByEmail(
    manager: EntityManager,
    projectId: string,
    email: string,
  ): Promise<ContactRow | null> {
    return this.selectOne(manager, 'c.project_id = $1 AND c.email = $2', [projectId, email]);
  }

  /**
   * GET /contacts: newest first (UUIDv7 id), keyset on the cursor id, the
   * total under the same filters (exact up to EXACT_TOTAL_CAP, then an
   * estimate: see cappedTotal). Served by (project_id, id),
   * (project_id, subscribed, id), the trigram index for `search` and the
   * unique (project_id, email) for `email`.
   */
  async list(
    manager: EntityManager,
    projectId: string,
    filter: ContactListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: ContactRow[]; total: ListTotal }> {
    const { params, where } = filterClause(projectId, filter);
    const pageParams = [...params];
    const pageWhere = [...where];
    if (afterId) {
      pageParams.push(afterId);
      pageWhere.push(`c.id < $${pageParams.length}`);
    }
    pageParams.push(limit + 1);
    const [total, rows] = await Promise.all([
      cappedTotal(
        (text, values) => manager.query(text, values),
        `SELECT 1 FROM contacts c WHERE ${where.join(' AND ')}`,
        params,
      ),
      queryRows<ContactRow>(
        manager,
        `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE ${pageWhere.join(' AND ')}
         ORDER BY c.id DESC LIMIT $${pageParams.length}`,
        pageParams,
      ),
    ]);
    return { rows, total };
  }

  /**
   * One page of an export: the list's filters and order, keyset-paged by id, without the count.
   * Each page is its own short statement, so a long download holds no connection between pages.
   */
  exportPage(
    manager: EntityManager,
    projectId: string,
    filter: ContactListFilter,
    beforeId: string | null,
    limit: number,
  ): Promise<ContactRow[]> {
    const { params, where } = filterClause(projectId, filter);
    if (beforeId) {
      params.push(beforeId);
      where.push(`c.id < $${params.length}`);
    }
    params.push(limit);
    return queryRows<ContactRow>(
      manager,
      `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE ${where.join(' AND ')}
       ORDER BY c.id DESC LIMIT $${params.length}`,
      params,
    );
  }

  /** PATCH: merge data and optionally set subscribed, in one statement. */
  /** The same change to these contacts of the project; answers the rows changed. */
  updateMany(
    manager: EntityManager,
    projectId: string,
    ids: string[],
    subscribed: boolean | undefined,
    patch: DataPatch,
  ): Promise<ContactRow[]> {
    return queryRows<ContactRow>(
      manager,
      `UPDATE contacts c SET
         subscribed = COALESCE($3, c.subscribed),
         data = merge_contact_data(c.data, $4::jsonb, $5::text[]),
         updated_at = now()
       WHERE c.project_id = $1 AND c.id = ANY($2::uuid[]) ${RETURNING_CONTACT}`,
      [projectId, ids, subscribed ?? null, JSON.stringify(patch.set), patch.remove],
    );
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
   * Bulk create-or-update of distinct emails (an import chunk): one set-based
   * statement through `upsert_contacts`, which writes the contacts in
   * (project_id, email COLLATE "C") order, the lock order of every other
   * multi-contact writer (track batches, sends), so it cannot close a lock
   * cycle with them.
   */
  async bulkUpsert(
    manager: EntityManager,
    projectId: string,
    inputs: BulkContactInput[],
  ): Promise<{ created: number; updated: number }> {
    if (inputs.length === 0) return { created: 0, updated: 0 };
    const batch = inputs.map((input, ord) =>
      contactUpsertInput(ord, {
        projectId,
        email: input.email,
        patch: { set: input.set, remove: input.remove },
        subscribed: input.subscribed,
        subscribedIfNew: true,
      }),
    );
    const [{ created, written }] = await queryRows<{ created: number; written: number }>(
      manager,
      UPSERT_CONTACTS_COUNTED,
      [JSON.stringify(batch)],
    );
    return { created, updated: written - created };
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

/** The WHERE of the contact list's filters (GET /contacts, GET /contacts/export), alias `c`. */
function filterClause(
  projectId: string,
  filter: ContactListFilter,
): { params: unknown[]; where: string[] } {
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
    params.push(containsPattern(filter.search));
    where.push(`c.email ILIKE $${params.length}`);
  }
  return { params, where };
}
