import { Column, Entity, Index, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';

/** Sender health (contract "Sender health"): PAUSED holds marketing mail until an operator resumes. */
export enum SendingStatus {
  HEALTHY = 'HEALTHY',
  WARNING = 'WARNING',
  PAUSED = 'PAUSED',
}

/** A tracking domain's state (contract "Tracking domain"): links use it once VERIFIED. */
export enum TrackingDomainStatus {
  PENDING = 'PENDING',
  VERIFIED = 'VERIFIED',
  FAILED = 'FAILED',
}

/** The tracking domain's CNAME as the last check saw it (`error` and `found` only when it did not match). */
export interface TrackingDomainRecord {
  status: TrackingDomainStatus;
  error?: string;
  found?: string[];
}

@Entity('projects')
// One project per verified tracking domain: a CNAME to the service proves no more than that.
@Index('projects_verified_tracking_domain_key', ['trackingDomain'], {
  unique: true,
  where: `"tracking_domain_status" = 'VERIFIED'`,
})
export class Project extends BaseEntity {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** The sender of mail whose request and template name none (PATCH /project {defaultFrom}). */
  @Column({ type: 'varchar', length: 320, nullable: true })
  defaultFromEmail: string | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  defaultFromName: string | null;

  @Column({
    type: 'enum',
    enum: SendingStatus,
    enumName: 'project_sending_status',
    default: SendingStatus.HEALTHY,
  })
  sendingStatus: SendingStatus;

  /** Why the status is WARNING or PAUSED (the rate that crossed its threshold). */
  @Column({ type: 'varchar', length: 200, nullable: true })
  sendingReason: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  sendingPausedAt: Date | null;

  /** The last resume: thresholds count mail from then on, so a resume is not undone by the next bounce. */
  @Column({ type: 'timestamptz', nullable: true })
  sendingWindowFrom: Date | null;

  /** The host of its pixel, click and unsubscribe links once VERIFIED (PATCH /project {trackingDomain}). */
  @Column({ type: 'varchar', length: 253, nullable: true })
  trackingDomain: string | null;

  @Column({
    type: 'enum',
    enum: TrackingDomainStatus,
    enumName: 'project_tracking_domain_status',
    nullable: true,
  })
  trackingDomainStatus: TrackingDomainStatus | null;

  @Column({ type: 'jsonb', nullable: true })
  trackingDomainRecord: TrackingDomainRecord | null;

  /** When the domain was set: starts its pending window, and a check of an older setting writes nothing. */
  @Column({ type: 'timestamptz', nullable: true })
  trackingDomainSetAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  trackingDomainCheckedAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
