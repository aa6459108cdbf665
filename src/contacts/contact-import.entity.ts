import {
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

export enum ImportStatus {
  QUEUED = 'QUEUED',
  PROCESSING = 'PROCESSING',
  COMPLETED = 'COMPLETED',
  FAILED = 'FAILED',
}

/** One error of one input row, as reported by GET /contacts/imports/{id}. */
export interface ImportRowError {
  /** 1-based position among the data rows (JSON array index + 1, or CSV record number). */
  row: number;
  /** CSV only: the line of the file the record starts on (the header is line 1). */
  line?: number;
  email: string | null;
  field: string;
  code: string;
  message: string;
}

/**
 * A bulk import job. Progress counters and `nextChunk` (the resume cursor) are
 * updated in the same transaction as the contacts of each chunk, so a worker
 * that dies mid-import is resumed by the next one after the last committed chunk.
 */
@Entity('contact_imports')
@Index('contact_imports_project_id_id_idx', ['projectId', 'id'])
export class ContactImport extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @Column({ type: 'varchar', length: 20 })
  status: ImportStatus;

  @Column({ type: 'varchar', length: 10 })
  format: 'json' | 'csv';

  @Column({ type: 'int' })
  total: number;

  @Column({ type: 'int', default: 0 })
  processed: number;

  @Column({ type: 'int', default: 0 })
  created: number;

  @Column({ type: 'int', default: 0 })
  updated: number;

  @Column({ type: 'int', default: 0 })
  failed: number;

  /** Per-row errors, in row order; capped (see MAX_REPORTED_ERRORS), `failed` stays exact. */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  errors: ImportRowError[];

  @Column({ type: 'int' })
  chunkCount: number;

  /** Resume cursor: chunks with seq < nextChunk are committed. */
  @Column({ type: 'int', default: 0 })
  nextChunk: number;

  @Column({ type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

/** The raw rows of an import, stored durably in chunks so the worker processes one chunk per transaction. */
@Entity('contact_import_chunks')
export class ContactImportChunk {
  @PrimaryColumn('uuid')
  importId: string;

  @PrimaryColumn('int')
  seq: number;

  @ManyToOne(() => ContactImport, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'import_id' })
  contactImport?: ContactImport;

  /** RawImportRow[]: as received, validated by the worker. */
  @Column({ type: 'jsonb' })
  rows: unknown[];
}
