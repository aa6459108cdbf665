import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

export enum CampaignStatus {
  DRAFT = 'DRAFT',
  SCHEDULED = 'SCHEDULED',
  SENDING = 'SENDING',
  SENT = 'SENT',
  CANCELLED = 'CANCELLED',
  /** Stopped by hand or by sender health: nothing more is handed to SMTP until resumed. */
  PAUSED = 'PAUSED',
}

export enum AudienceType {
  ALL = 'ALL',
  SEGMENT = 'SEGMENT',
  FILTERED = 'FILTERED',
}

/**
 * A bulk email to an audience. Content and audience are editable in DRAFT
 * and SCHEDULED; sending freezes the content (`contentId`, shared by every
 * recipient's email record) and the audience (the fan-out's snapshot).
 * The fan-out's progress is committed with each batch: `fanoutCursor` (the
 * last contact id done, keyset order) and `fanoutDone`.
 */
@Entity('campaigns')
@Index('campaigns_project_id_id_idx', ['projectId', 'id'])
// The recovery sweep: campaigns that are waiting or sending (a few rows).
@Index('campaigns_open_idx', ['status'], { where: `status IN ('SCHEDULED', 'SENDING')` })
export class Campaign extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** Liquid. */
  @Column({ type: 'text' })
  subject: string;

  /** HTML with Liquid. */
  @Column({ type: 'text' })
  body: string;

  @Column({ type: 'varchar', length: 320 })
  fromEmail: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  fromName: string | null;

  @Column({ type: 'varchar', length: 320, nullable: true })
  replyTo: string | null;

  @Column({ type: 'enum', enum: AudienceType, enumName: 'campaign_audience_type' })
  audienceType: AudienceType;

  /** SEGMENT: the segment (no foreign key: a deleted segment is reported when the campaign is sent). */
  @Column({ type: 'uuid', nullable: true })
  segmentId: string | null;

  /** FILTERED: a condition (the condition language). */
  @Column({ type: 'jsonb', nullable: true })
  audienceFilter: Record<string, unknown> | null;

  @Column({ type: 'boolean', default: true })
  trackOpens: boolean;

  @Column({ type: 'boolean', default: true })
  trackClicks: boolean;

  @Column({
    type: 'enum',
    enum: CampaignStatus,
    enumName: 'campaign_status',
    default: CampaignStatus.DRAFT,
  })
  status: CampaignStatus;

  @Column({ type: 'timestamptz', nullable: true })
  scheduledAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  cancelledAt: Date | null;

  /** The audience's size when sending started; null before. */
  @Column({ type: 'int', nullable: true })
  recipientCount: number | null;

  /** The content frozen at the start (sending's email_contents). */
  @Column({ type: 'uuid', nullable: true })
  contentId: string | null;

  /** Last contact id whose email record is committed (keyset order); null before the first batch. */
  @Column({ type: 'uuid', nullable: true })
  fanoutCursor: string | null;

  @Column({ type: 'boolean', default: false })
  fanoutDone: boolean;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
