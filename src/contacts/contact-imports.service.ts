import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { decodeCursor, Page, pageOf, PaginationQueryDto } from '../common/pagination/pagination';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { newId } from '../database/id';
import { IMPORT_JOBS, ImportJobData } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { ImportRowError, ImportStatus } from './contact-import.entity';
import { ContactImportsRepository } from './contact-imports.repository';
import { BulkContactInput, ContactsRepository } from './contacts.repository';
import { ContactImportResponse, toContactImportResponse } from './dto/contact-import.response';
import {
  ImportBodyError,
  MAX_REPORTED_ERRORS,
  mergeDuplicates,
  RawImportRow,
  rowsFromCsv,
  rowsFromJson,
  validateImportRow,
} from './import-rows';

/**
 * Bulk import. The request stores the raw rows durably (chunks of
 * IMPORT_BATCH_SIZE) and enqueues one job (job id = import id) after commit.
 * The worker processes chunk after chunk, each in one transaction that also
 * advances the import's cursor, so a restart resumes after the last committed
 * chunk and never applies a chunk twice.
 */
@Injectable()
export class ContactImportsService {
  private readonly logger = new Logger(ContactImportsService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.IMPORTS)
    private readonly queue: Queue<ImportJobData, unknown, typeof IMPORT_JOBS.IMPORT>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly imports: ContactImportsRepository,
    private readonly contacts: ContactsRepository,
  ) {}

  /** POST /contacts/import: a JSON body (object) or CSV text (string, from the text/csv parser), by content type. */
  async start(
    projectId: string,
    body: unknown,
    format: 'csv' | 'json',
  ): Promise<ContactImportResponse> {
    let rows: RawImportRow[];
    try {
      rows =
        format === 'csv' ? rowsFromCsv(typeof body === 'string' ? body : '') : rowsFromJson(body);
    } catch (error) {
      if (error instanceof ImportBodyError) {
        throw error.status === 400
          ? ApiException.badRequest(error.message, error.errors.length ? error.errors : undefined)
          : ApiException.validation(error.errors, error.message);
      }
      throw error;
    }
    const size = this.config.importBatchSize;
    const chunks: RawImportRow[][] = [];
    for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size));
    const created = await this.dataSource.transaction((manager) =>
      this.imports.create(manager, { id: newId(), projectId, format, total: rows.length }, chunks),
    );
    await this.enqueue(created.id);
    return toContactImportResponse(created);
  }

  async get(projectId: string, id: string): Promise<ContactImportResponse> {
    const row = await this.imports.find(this.dataSource.manager, projectId, id);
    if (!row) throw ApiException.notFound('import', id);
    return toContactImportResponse(row);
  }

  /** GET /contacts/imports: the list envelope, newest first. */
  async list(projectId: string, query: PaginationQueryDto): Promise<Page<ContactImportResponse>> {
    const limit = query.limit ?? 20;
    const before = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.imports.page(
      this.dataSource.manager,
      projectId,
      limit,
      before,
    );
    return pageOf(rows, limit, total, toContactImportResponse, (row) => row.id);
  }

  async enqueue(importId: string): Promise<void> {
    await this.queue.add(IMPORT_JOBS.IMPORT, { importId }, { jobId: importId });
  }

  /**
   * The imports queue's recovery (ContactImportsRecovery): re-enqueues every
   * unfinished import; the job id makes this a no-op when its job exists.
   */
  async recoverUnfinished(): Promise<{ found: number }> {
    const ids = await this.imports.unfinishedIds(this.dataSource.manager);
    for (const id of ids) await this.enqueue(id);
    if (ids.length > 0)
      this.logger.log({ imports: ids.length }, 'Re-enqueued unfinished contact imports');
    return { found: ids.length };
  }

  /** The job: chunk after chunk until the cursor reaches the end. Repeating it does nothing twice. */
  async process(importId: string): Promise<void> {
    for (;;) {
      const done = await this.dataSource.transaction(async (manager) => {
        const current = await this.imports.lock(manager, importId);
        if (
          !current ||
          current.status === ImportStatus.COMPLETED ||
          current.status === ImportStatus.FAILED
        )
          return true;
        if (current.nextChunk >= current.chunkCount) {
          await this.imports.finish(manager, importId, ImportStatus.COMPLETED);
          return true;
        }
        const raw = (await this.imports.chunk(manager, importId, current.nextChunk)) ?? [];
        const valid: BulkContactInput[] = [];
        const errors: ImportRowError[] = [];
        for (const row of raw) {
          const result = validateImportRow(row);
          if (result.ok) valid.push(result.input);
          else errors.push(result.error);
        }
        const merged = mergeDuplicates(valid);
        const { created } = await this.contacts.bulkUpsert(manager, current.projectId, merged);
        await this.imports.advance(
          manager,
          importId,
          current.nextChunk,
          // Every valid row that did not create its contact updated one (duplicates in the file included).
          {
            processed: raw.length,
            created,
            updated: valid.length - created,
            failed: errors.length,
            errors,
          },
          MAX_REPORTED_ERRORS,
        );
        return false;
      });
      if (done) return;
    }
  }

  /** Retries exhausted: the import stops where it is, with what was committed. */
  async markFailed(importId: string): Promise<void> {
    await this.dataSource.transaction((manager) =>
      this.imports.finish(manager, importId, ImportStatus.FAILED),
    );
  }
}
