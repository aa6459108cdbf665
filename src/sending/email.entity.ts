import {
  BeforeInsert,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { Contact } from '../contacts/contact.entity';
import { newId } from '../database/id';
import { EmailContent } from './email-content.entity';

export enum EmailStatus {
  QUEUED = 'QUEUED',
  SENDING = 'SENDING',
  SENT = 'SENT',
  FAILED = 'FAILED',
  BOUNCED = 'BOUNCED',
  SUPPRESSED = 'SUPPRESSED',
  /** Campaign mail not yet handed to SMTP when its campaign was cancelled: never sent. */
  CANCELLED = 'CANCELLED',
  /** The recipient reported it as spam (a feedback report): after SENT or BOUNCED, never before. */
  COMPLAINED = 'COMPLAINED',
}

/** The email's bounce as the policy recorded it (GET /emails/{id} `bounce`). */
export interface EmailBounce {
  type: 'hard' | 'soft';
  status: string | null;
  diagnostic: string | null;
  source: string;
}

export enum EmailSource {
  TRANSACTIONAL = 'TRANSACTIONAL',
  CAMPAIGN = 'CAMPAIGN',
  WORKFLOW = 'WORKFLOW',
}

/** Metadata of one attachment; the bytes live in email_attachments until delivery ends. */
export interface EmailAttachmentRef {
  id: string;
  filename: string;
  contentType: string;
  size: number;
}

/**
 * One message to one recipient. The rendered subject/HTML/text are stored, so
 * a retry transmits exactly what was accepted by the API, whatever happens to
 * the template or the contact's data in between. Column names are relied on
 * by the segment compiler's engagement rules (sent/opened/clicked/bounced).
 */
/*
 * Partitioned by month of created_at (docs/scaling.md, "Partitions and
 * retention"), so the primary key carries it. One email per campaign
 * recipient and per workflow step are kept by campaign_recipients and
 * workflow_step_emails (a statement trigger), since a unique index of a partitioned
 * table must contain the partition key.
 */
@Entity('emails')
@Index('emails_project_id_contact_id_idx', ['projectId', 'contactId'])
@Index('emails_project_id_status_idx', ['projectId', 'status'])
@Index('emails_campaign_id_status_idx', ['campaignId', 'status'])
// The list endpoint: newest first within a project.
@Index('emails_project_id_id_idx', ['projectId', 'id'])
// ON DELETE CASCADE from contacts looks emails up by contact_id alone.
@Index('emails_contact_id_idx', ['contactId'])
export class Email {
  // Not BaseEntity: TypeORM keeps a base class's column over a subclass's, and this primary key carries created_at.
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_emails_id_created_at' })
  id: string;

  @CreateDateColumn({
    type: 'timestamptz',
    primary: true,
    primaryKeyConstraintName: 'PK_emails_id_created_at',
  })
  createdAt: Date;

  @BeforeInsert()
  assignId(): void {
    if (!this.id) this.id = newId();
  }

  @Column('uuid')
  projectId: string;

  @Column('uuid')
  contactId: string;

  /** Checked and cascaded by triggers, not a foreign key (migration ContactReferencesByTrigger). */
  @ManyToOne(() => Contact, { createForeignKeyConstraints: false })
  @JoinColumn({ name: 'contact_id' })
  contact?: Contact;

  @Column({ type: 'uuid', nullable: true })
  templateId: string | null;

  @Column({ type: 'uuid', nullable: true })
  campaignId: string | null;

  @Column({ type: 'uuid', nullable: true })
  workflowExecutionId: string | null;

  /** The SEND_EMAIL step that made it: one email per (execution, step), enforced by an index. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  workflowStepId: string | null;

  @Column({ type: 'enum', enum: EmailSource, enumName: 'email_source' })
  source: EmailSource;

  /** Marketing mail carries List-Unsubscribe and is never sent to unsubscribed contacts. */
  @Column({ type: 'boolean', default: false })
  marketing: boolean;

  /** Decided at compose: the delivered HTML gets the open pixel / rewritten links (the stored HTML never does). */
  @Column({ type: 'boolean', default: false })
  trackOpens: boolean;

  @Column({ type: 'boolean', default: false })
  trackClicks: boolean;

  @Column({ type: 'varchar', length: 320 })
  toEmail: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  toName: string | null;

  @Column({ type: 'varchar', length: 320 })
  fromEmail: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  fromName: string | null;

  @Column({ type: 'varchar', length: 320, nullable: true })
  replyTo: string | null;

  @Column({ type: 'text' })
  subject: string;

  /**
   * The rendered body, or null for mail rendered at delivery from shared
   * content (`contentId`: a campaign stores its content once, not a copy per
   * recipient).
   */
  @Column({ type: 'text', nullable: true })
  html: string | null;

  @Column({ type: 'text', nullable: true })
  text: string | null;

  /** Shared content rendered at delivery (campaign mail); null when html/text hold the rendered message. */
  @Column({ type: 'uuid', nullable: true })
  contentId: string | null;

  /** Checked by triggers, deletion restricted, not a foreign key (migration ContactReferencesByTrigger). */
  @ManyToOne(() => EmailContent, { createForeignKeyConstraints: false })
  @JoinColumn({ name: 'content_id' })
  content?: EmailContent;

  /** Caller-supplied extra headers (validated: no CR/LF, no reserved names). */
  @Column({ type: 'jsonb', default: () => "'{}'" })
  headers: Record<string, string>;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  attachments: EmailAttachmentRef[];

  @Column({
    type: 'enum',
    enum: EmailStatus,
    enumName: 'email_status',
    default: EmailStatus.QUEUED,
  })
  status: EmailStatus;

  @Column({ type: 'varchar', length: 998, nullable: true })
  messageId: string | null;

  @Column({ type: 'int', default: 0 })
  attempts: number;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  /** Set when SENT: false for mail from an unverified domain (allowed only without REQUIRE_VERIFIED_SENDER). */
  @Column({ type: 'boolean', nullable: true })
  dkimSigned: boolean | null;

  /**
   * The envelope sender (`b-<token>@<domain>`) of the attempts, written with
   * the final status after one: what was sent, whatever the domain's
   * RETURN_PATH record does later. Null for mail never attempted.
   */
  @Column({ type: 'varchar', length: 320, nullable: true })
  returnPath: string | null;

  /** BullMQ priority the job was queued with (lower runs first). */
  @Column({ type: 'smallint' })
  priority: number;

  /** Partial index (WHERE status = 'QUEUED' AND campaign_id IS NULL, hand-written in the migrations) for the recovery sweep. */
  @Index('emails_queued_at_queued_idx', { synchronize: false })
  @Column({ type: 'timestamptz', default: () => 'now()' })
  queuedAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  sentAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  openedAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  clickedAt: Date | null;

  /** Hits of the open pixel and of tracked links (every hit; openedAt/clickedAt are the first). */
  @Column({ type: 'int', default: 0 })
  opens: number;

  @Column({ type: 'int', default: 0 })
  clicks: number;

  /** Sender health's window (hand-written expression index on COALESCE(sent_at, bounced_at)). */
  @Index('emails_project_id_outcome_at_idx', { synchronize: false })
  @Column({ type: 'timestamptz', nullable: true })
  bouncedAt: Date | null;

  /** Hard, or soft while no hard bounce came (bounces/bounce-policy.ts). */
  @Column({ type: 'jsonb', nullable: true })
  bounce: EmailBounce | null;

  @Column({ type: 'timestamptz', nullable: true })
  complainedAt: Date | null;

  /** When the recipient unsubscribed through this message's link (a campaign's `unsubscribed` count). */
  @Column({ type: 'timestamptz', nullable: true })
  unsubscribedAt: Date | null;

  /** Partial index (WHERE status = 'SENDING', hand-written in the migration) for the delivery recovery. */
  @Index('emails_updated_at_sending_idx', { synchronize: false })
  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
