import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

export const PROVIDERS = ['ses', 'postmark', 'mailgun', 'sendgrid', 'resend'] as const;
export type Provider = (typeof PROVIDERS)[number];

/**
 * One project's webhook from one relay provider (contract: "Provider
 * webhooks"): the unguessable id in its URL and the credentials that verify
 * what arrives there, sealed with APP_SECRET and never answered.
 */
@Entity('provider_hooks')
@Index('provider_hooks_project_id_provider_key', ['projectId', 'provider'], { unique: true })
@Index('provider_hooks_inbound_id_key', ['inboundId'], { unique: true })
export class ProviderHook extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id', foreignKeyConstraintName: 'FK_provider_hooks_project' })
  project?: Project;

  @Column({ type: 'varchar', length: 16 })
  provider: Provider;

  /** The last segment of `/inbound/{provider}/{inboundId}`: 192 random bits, base64url. */
  @Column({ type: 'varchar', length: 64 })
  inboundId: string;

  /** The provider's credentials as JSON, sealed (associated data `provider-hook:<id>`); null for ses. */
  @Column({ type: 'text', nullable: true })
  credentialsSealed: string | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
