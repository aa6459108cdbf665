import { Column, Entity, Index } from 'typeorm';
import { BaseEntity } from '../database/base.entity';

/**
 * Attachment bytes, stored once per send and shared by its recipients (50
 * recipients of a 10 MB file is 10 MB, not 500). `pending` counts the email
 * records that still need the bytes; when the last one reaches a final status
 * the row is deleted, so the database does not keep every file ever mailed.
 */
@Entity('email_attachments')
export class EmailAttachment extends BaseEntity {
  @Index()
  @Column('uuid')
  projectId: string;

  @Column({ type: 'varchar', length: 255 })
  filename: string;

  @Column({ type: 'varchar', length: 255 })
  contentType: string;

  @Column({ type: 'bytea' })
  content: Buffer;

  @Column({ type: 'int' })
  pending: number;
}
