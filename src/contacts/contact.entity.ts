import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

export enum SuppressionReason {
  BOUNCE = 'bounce',
  COMPLAINT = 'complaint',
  MANUAL = 'manual',
}

/**
 * A recipient of one project. `email` is stored trimmed and lower-cased, so the
 * unique index on (project_id, email) is the duplicate rule and the target of
 * every upsert (ON CONFLICT (project_id, email)).
 */
@Entity('contacts')
@Index('contacts_project_id_email_key', ['projectId', 'email'], { unique: true })
// Keyset pagination (newest first by UUIDv7 id) within a project, with and without the subscribed filter.
@Index('contacts_project_id_id_idx', ['projectId', 'id'])
@Index('contacts_project_id_subscribed_id_idx', ['projectId', 'subscribed', 'id'])
// GET /suppressions: newest suppression first.
@Index('contacts_suppressed_idx', ['projectId', 'suppressedAt', 'id'], { where: 'suppressed' })
export class Contact extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  /** Trigram index (hand-written in the migration): `search` is a case-insensitive substring match. */
  @Index('contacts_email_trgm_idx', { synchronize: false })
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'boolean', default: true })
  subscribed: boolean;

  /** Set by delivery on a hard bounce or complaint; suppressed contacts are never sent to. */
  @Column({ type: 'boolean', default: false })
  suppressed: boolean;

  @Column({
    type: 'enum',
    enum: SuppressionReason,
    enumName: 'suppression_reason',
    nullable: true,
  })
  suppressedReason: SuppressionReason | null;

  @Column({ type: 'timestamptz', nullable: true })
  suppressedAt: Date | null;

  /** GIN (jsonb_path_ops, hand-written in the migration) for segment conditions on data keys. */
  @Index('contacts_data_gin_idx', { synchronize: false })
  @Column({ type: 'jsonb', default: () => "'{}'" })
  data: Record<string, unknown>;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
