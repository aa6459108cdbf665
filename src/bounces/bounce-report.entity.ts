import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';
import type { BounceKind, BounceSource } from './bounce-report';

/** What the policy did with a report: changed something, or was kept without an effect. */
export type BounceReportOutcome = 'applied' | 'unmatched' | 'ignored';

/**
 * Every bounce or complaint report received, matched or not: the unique
 * dedupe key makes a repeated report a no-op, and unmatched reports stay
 * visible (email_id null) instead of failing.
 */
@Entity('bounce_reports')
@Index('bounce_reports_dedupe_key_key', ['dedupeKey'], { unique: true })
@Index('bounce_reports_project_id_id_idx', ['projectId', 'id'])
@Index('bounce_reports_email_id_idx', ['emailId'])
export class BounceReportRecord extends BaseEntity {
  @Column({ type: 'uuid', nullable: true })
  projectId: string | null;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id', foreignKeyConstraintName: 'FK_bounce_reports_project' })
  project?: Project;

  /**
   * No foreign key: emails is partitioned and (id) alone is not unique there.
   * A trigger on emails sets it to null when the email is deleted (as ON
   * DELETE SET NULL did), and retention does before dropping a month.
   */
  @Column({ type: 'uuid', nullable: true })
  emailId: string | null;

  @Column({ type: 'varchar', length: 16 })
  kind: BounceKind;

  @Column({ type: 'varchar', length: 16 })
  source: BounceSource;

  @Column({ type: 'varchar', length: 320, nullable: true })
  recipient: string | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  status: string | null;

  @Column({ type: 'text', nullable: true })
  diagnostic: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  feedbackType: string | null;

  @Column({ type: 'varchar', length: 500 })
  dedupeKey: string;

  @Column({ type: 'varchar', length: 16 })
  outcome: BounceReportOutcome;
}
