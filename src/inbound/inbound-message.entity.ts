import { BeforeInsert, Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';
import { newId } from '../database/id';

export enum InboundStatus {
  /** Stored by the listener (250 answered); its PROCESS job parses it. */
  RECEIVED = 'RECEIVED',
  /** Its reports named an email of ours and were applied. */
  PROCESSED = 'PROCESSED',
  /** A bounce or complaint that names no email of ours (kept, listed by `inbound list`). */
  UNMATCHED = 'UNMATCHED',
  /** Nothing to act on: an auto-reply, a delivered/relayed notice, an unknown message. */
  IGNORED = 'IGNORED',
  /** Its job failed every attempt (the error is in `result`). */
  FAILED = 'FAILED',
}

/** What processing made of a message, for `inbound list` and for people reading the table. */
export interface InboundResult {
  format: string;
  emailId: string | null;
  /** How the email was found: `envelope` (the RCPT TO token), `return-path`, `message-id`, `envelope-id`. */
  matchedBy: string | null;
  /** Reports handed to the bounce policy, by kind. */
  reports: Record<string, number>;
  error?: string;
}

/**
 * One message the inbound listener accepted, stored before it answered 250:
 * the raw bytes and the envelope, then the outcome of its processing. Rows
 * are deleted INBOUND_RETENTION_DAYS after they were processed.
 */
@Entity('inbound_messages')
@Index('inbound_messages_status_received_at_idx', ['status', 'receivedAt'])
@Index('inbound_messages_processed_at_idx', ['processedAt'])
export class InboundMessage {
  @PrimaryColumn('uuid')
  id: string;

  @CreateDateColumn({ type: 'timestamptz' })
  receivedAt: Date;

  @Column({ type: 'bytea' })
  raw: Buffer;

  /** Envelope sender as given in MAIL FROM; '' for the null sender `<>`. */
  @Column({ type: 'varchar', length: 998 })
  mailFrom: string;

  /** Envelope recipients as given in RCPT TO (each one the listener accepted). */
  @Column({ type: 'text', array: true })
  rcptTo: string[];

  @Column({ type: 'varchar', length: 20, default: InboundStatus.RECEIVED })
  status: InboundStatus;

  @Column({ type: 'timestamptz', nullable: true })
  processedAt: Date | null;

  @Column({ type: 'jsonb', nullable: true })
  result: InboundResult | null;

  @BeforeInsert()
  assignId(): void {
    if (!this.id) this.id = newId();
  }
}
