import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Campaign } from './campaign.entity';

/** Counter rows per campaign: writers spread over this many, so deliveries do not queue on one row lock. */
export const COUNTER_SLOTS = 8;

/**
 * A campaign's statistics as counters, maintained by triggers on `emails` in
 * the same transaction as every change they count (migration
 * CampaignCounters): a statement-level trigger adds inserted rows, a
 * row-level one moves a row between status columns and counts the first
 * open, click and unsubscribe, and deletes (a contact erased) take the row
 * out. So the sum over a campaign's slots equals a count of its email records
 * in any snapshot. A row-level trigger uses slot = last byte of the email id
 * mod COUNTER_SLOTS; the statement trigger uses slot 0. Values of one slot can
 * be negative; only the sums mean something.
 */
@Entity('campaign_counters')
export class CampaignCounter {
  @PrimaryColumn('uuid')
  campaignId: string;

  @PrimaryColumn('smallint')
  slot: number;

  @ManyToOne(() => Campaign, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'campaign_id' })
  campaign?: Campaign;

  @Column({ type: 'int', default: 0 }) queued: number;
  @Column({ type: 'int', default: 0 }) sending: number;
  @Column({ type: 'int', default: 0 }) sent: number;
  @Column({ type: 'int', default: 0 }) failed: number;
  @Column({ type: 'int', default: 0 }) bounced: number;
  @Column({ type: 'int', default: 0 }) suppressed: number;
  @Column({ type: 'int', default: 0 }) cancelled: number;
  @Column({ type: 'int', default: 0 }) opened: number;
  @Column({ type: 'int', default: 0 }) clicked: number;
  @Column({ type: 'int', default: 0 }) unsubscribed: number;
  @Column({ type: 'int', default: 0 }) complained: number;
  /** Messages a server accepted (sent_at set), late bounces and complaints included: the stats' `sent`. */
  @Column({ type: 'int', default: 0 }) accepted: number;
}
