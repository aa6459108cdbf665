import { Column, Entity, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';

/** Sender health (contract "Sender health"): PAUSED holds marketing mail until an operator resumes. */
export enum SendingStatus {
  HEALTHY = 'HEALTHY',
  WARNING = 'WARNING',
  PAUSED = 'PAUSED',
}

@Entity('projects')
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

  /** Double opt-in (PATCH /project {doubleOptIn}): POST /v1/subscribe asks the address to confirm. */
  @Column({ type: 'boolean', default: false })
  doubleOptInEnabled: boolean;

  /**
   * The confirmation template; null (or a template since deleted) sends the
   * built-in one. No foreign key, so deleting the template is never refused.
   */
  @Column({ type: 'uuid', nullable: true })
  doubleOptInTemplateId: string | null;

  /** Where GET /confirm/{token} redirects (302) instead of showing its page. */
  @Column({ type: 'varchar', length: 2048, nullable: true })
  confirmRedirectUrl: string | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
