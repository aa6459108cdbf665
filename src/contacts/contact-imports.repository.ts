import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ContactImport, ImportRowError, ImportStatus } from './contact-import.entity';
import type { RawImportRow } from './import-rows';
import { queryRows } from '../database/query-rows';

const IMPORT_COLUMNS = `i.id, i.project_id AS "projectId", i.status, i.format, i.total, i.processed, i.created,
  i.updated, i.failed, i.errors, i.chunk_count AS "chunkCount", i.next_chunk AS "nextChunk",
  i.finished_at AS "finishedAt", i.created_at AS "createdAt", i.updated_at AS "updatedAt"`;

export type ImportRow = Omit<ContactImport, 'assignId' | 'project'>;

export interface ChunkProgress {
  processed: number;
  created: number;
  updated: number;
  failed: number;
  errors: ImportRowError[];
}

/** SQL of the import tables (the contacts themselves are written by ContactsRepository.bulkUpsert). */
@Injectable()
export class ContactImportsRepository {
  /** The import and all its chunks, in the caller's transaction. */
  async create(
    manager: EntityManager,
    row: { id: string; projectId: string; format: 'json' | 'csv'; total: number },
    chunks: RawImportRow[][],
  ): Promise<ImportRow> {
    const [created] = await queryRows<ImportRow>(
      manager,
      `INSERT INTO contact_imports AS i (id, project_id, status, format, total, chunk_count)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${IMPORT_COLUMNS}`,
      [row.id, row.projectId, ImportStatus.QUEUED, row.format, row.total, chunks.length],
    );
    // One JSON document for all chunks: parsed once by Postgres, no array-literal escaping.
    await queryRows(
      manager,
      `INSERT INTO contact_import_chunks (import_id, seq, rows)
       SELECT $1, c.ordinality - 1, c.value FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS c`,
      [row.id, JSON.stringify(chunks)],
    );
    return created;
  }

  async find(manager: EntityManager, projectId: string, id: string): Promise<ImportRow | null> {
    const rows = await queryRows<ImportRow>(
      manager,
      `SELECT ${IMPORT_COLUMNS} FROM contact_imports i WHERE i.project_id = $1 AND i.id = $2`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  /** One page of the project's imports, newest first (limit + 1 rows, for hasMore), and their total. */
  async page(
    manager: EntityManager,
    projectId: string,
    limit: number,
    beforeId: string | null,
  ): Promise<{ rows: ImportRow[]; total: number }> {
    const [rows, [{ total }]] = await Promise.all([
      queryRows<ImportRow>(
        manager,
        `SELECT ${IMPORT_COLUMNS} FROM contact_imports i
          WHERE i.project_id = $1 AND ($2::uuid IS NULL OR i.id < $2)
          ORDER BY i.id DESC LIMIT $3`,
        [projectId, beforeId, limit + 1],
      ),
      queryRows<{ total: number }>(
        manager,
        'SELECT count(*)::int AS total FROM contact_imports WHERE project_id = $1',
        [projectId],
      ),
    ]);
    return { rows, total };
  }

  /** Locks the import for one chunk transaction: a second worker on the same import waits, then sees the new cursor. */
  async lock(manager: EntityManager, id: string): Promise<ImportRow | null> {
    const rows = await queryRows<ImportRow>(
      manager,
      `SELECT ${IMPORT_COLUMNS} FROM contact_imports i WHERE i.id = $1 FOR UPDATE`,
      [id],
    );
    return rows[0] ?? null;
  }

  async chunk(manager: EntityManager, id: string, seq: number): Promise<RawImportRow[] | null> {
    const rows = await queryRows<{ rows: RawImportRow[] }>(
      manager,
      `SELECT rows FROM contact_import_chunks WHERE import_id = $1 AND seq = $2`,
      [id, seq],
    );
    return rows[0]?.rows ?? null;
  }

  /** Commits one chunk's counters together with the cursor that says it is done. */
  async advance(
    manager: EntityManager,
    id: string,
    seq: number,
    progress: ChunkProgress,
    maxErrors: number,
  ): Promise<void> {
    await queryRows(
      manager,
      `UPDATE contact_imports SET
         status = $3,
         next_chunk = $2 + 1,
         processed = processed + $4,
         created = created + $5,
         updated = updated + $6,
         failed = failed + $7,
         errors = CASE WHEN jsonb_array_length(errors) >= $9 THEN errors
                       ELSE errors || (SELECT COALESCE(jsonb_agg(e), '[]'::jsonb)
                                       FROM (SELECT e FROM jsonb_array_elements($8::jsonb) AS e
                                             LIMIT GREATEST($9 - jsonb_array_length(errors), 0)) x) END,
         updated_at = now()
       WHERE id = $1 AND next_chunk = $2`,
      [
        id,
        seq,
        ImportStatus.PROCESSING,
        progress.processed,
        progress.created,
        progress.updated,
        progress.failed,
        JSON.stringify(progress.errors),
        maxErrors,
      ],
    );
  }

  /** The end: status, time, and the raw rows are no longer needed. */
  async finish(
    manager: EntityManager,
    id: string,
    status: ImportStatus.COMPLETED | ImportStatus.FAILED,
  ): Promise<void> {
    await queryRows(
      manager,
      `UPDATE contact_imports SET status = $2, finished_at = now(), updated_at = now() WHERE id = $1`,
      [id, status],
    );
    await queryRows(manager, `DELETE FROM contact_import_chunks WHERE import_id = $1`, [id]);
  }

  /** Imports a worker should be running: re-enqueued at worker start in case an enqueue was lost. */
  async unfinishedIds(manager: EntityManager): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT id FROM contact_imports WHERE status IN ($1, $2) ORDER BY id LIMIT 1000`,
      [ImportStatus.QUEUED, ImportStatus.PROCESSING],
    );
    return rows.map((r) => r.id);
  }
}
