import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';
import { EmailAttachment } from './email-attachment.entity';
import type { EmailAttachmentRef } from './email.entity';

/** Shared content of bulk mail (email_contents). */
export interface StoredContent {
  id: string;
  projectId: string;
  subject: string;
  body: string;
}

/**
 * The statements of what an email carries besides its row: shared content of
 * bulk mail (email_contents) and attachment bytes (email_attachments). Each
 * method runs on the handle it is given: the caller's transaction, or
 * `dataSource.manager` for a statement on its own.
 */
@Injectable()
export class EmailContentsRepository {
  async insertContent(manager: EntityManager, content: StoredContent): Promise<void> {
    await queryRows(
      manager,
      'INSERT INTO email_contents (id, project_id, subject, body, created_at) VALUES ($1, $2, $3, $4, now())',
      [content.id, content.projectId, content.subject, content.body],
    );
  }

  async findContent(manager: EntityManager, id: string): Promise<StoredContent | null> {
    const rows = await queryRows<StoredContent>(
      manager,
      'SELECT id, project_id AS "projectId", subject, body FROM email_contents WHERE id = $1',
      [id],
    );
    return rows[0] ?? null;
  }

  async insertAttachments(manager: EntityManager, rows: Partial<EmailAttachment>[]): Promise<void> {
    if (rows.length === 0) return;
    await manager
      .createQueryBuilder()
      .insert()
      .into(EmailAttachment)
      .values(rows)
      .updateEntity(false)
      .execute();
  }

  async attachmentContents(manager: EntityManager, ids: string[]): Promise<Map<string, Buffer>> {
    if (ids.length === 0) return new Map();
    const rows = await queryRows<{ id: string; content: Buffer }>(
      manager,
      'SELECT id, content FROM email_attachments WHERE id = ANY($1::uuid[])',
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.content]));
  }

  /**
   * One fewer email needs these attachments; the bytes go with the last one.
   * Runs once per email, on its transition to a final status.
   */
  async releaseAttachments(manager: EntityManager, refs: EmailAttachmentRef[]): Promise<void> {
    if (refs.length === 0) return;
    const ids = refs.map((r) => r.id);
    await queryRows(
      manager,
      'UPDATE email_attachments SET pending = pending - 1 WHERE id = ANY($1::uuid[])',
      [ids],
    );
    await queryRows(
      manager,
      'DELETE FROM email_attachments WHERE id = ANY($1::uuid[]) AND pending <= 0',
      [ids],
    );
  }
}
