import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

/**
 * A customer's URL that receives the project's events (Standard Webhooks).
 * `events` are names or prefixes ending in `*`. The signing secret is kept
 * sealed with APP_SECRET (common/crypto/secret-box) and shown once.
 */
@Entity('webhook_endpoints')
@Index('webhook_endpoints_project_id_id_idx', ['projectId', 'id'])
export class WebhookEndpoint extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  /** As answered: credentials (`user:pass@`) replaced by `***`; a row saved before they were sealed may still hold them. */
  @Column({ type: 'varchar', length: 2048 })
  url: string;

  /** The URL with its credentials, sealed (associated data `url:<id>`); null when it has none. */
  @Column({ type: 'text', nullable: true })
  urlSealed: string | null;

  @Column({ type: 'text', array: true })
  events: string[];

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** `whsec_…`, sealed. */
  @Column({ type: 'text' })
  secretSealed: string;

  /** Since when every attempt has failed (null after a success); 3 days of it disable the endpoint. */
  @Column({ type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  /** Why the system disabled it (null when enabled, or disabled by the user). */
  @Column({ type: 'varchar', length: 200, nullable: true })
  disabledReason: string | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
