import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';

export enum WebhookDeliveryStatus {
  PENDING = 'PENDING',
  SUCCEEDED = 'SUCCEEDED',
  FAILED = 'FAILED',
}

/**
 * One event for one endpoint: the outbox row. Written by a trigger on
 * `events` in the same transaction as the event (migration Webhooks), so a
 * committed event always has its deliveries and a rolled-back one none. The
 * body is fixed when written (`payload`, the exact bytes signed and sent);
 * `id` is the `webhook-id` header, the same on every attempt.
 */
@Entity('webhook_deliveries')
@Index('webhook_deliveries_endpoint_id_id_idx', ['endpointId', 'id'])
export class WebhookDelivery extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @Column('uuid')
  endpointId: string;

  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id' })
  endpoint?: WebhookEndpoint;

  /** The event delivered (no foreign key: the delivery outlives an erased contact's events). */
  @Column({ type: 'uuid', nullable: true })
  eventId: string | null;

  @Column({ type: 'varchar', length: 100 })
  eventType: string;

  /** The JSON body `{type, timestamp, data}`, as sent. */
  @Column({ type: 'text' })
  payload: string;

  @Column({
    type: 'enum',
    enum: WebhookDeliveryStatus,
    enumName: 'webhook_delivery_status',
    default: WebhookDeliveryStatus.PENDING,
  })
  status: WebhookDeliveryStatus;

  @Column({ type: 'int', default: 0 })
  attempts: number;

  @Column({ type: 'int', nullable: true })
  responseStatus: number | null;

  /** The first 1 KB of the last response, or the network error. */
  @Column({ type: 'text', nullable: true })
  lastError: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  lastAttemptAt: Date | null;

  /**
   * Partial index (endpoint_id, next_attempt_at) WHERE status = 'PENDING',
   * hand-written in the migrations: the claim's exact order (no sort, whatever
   * the statistics say) and the dispatch sweep's one probe per endpoint.
   */
  @Index('webhook_deliveries_pending_idx', { synchronize: false })
  @Column({ type: 'timestamptz', nullable: true, default: () => 'now()' })
  nextAttemptAt: Date | null;

  /**
   * A worker holds the delivery for an attempt until then (the claim): not
   * indexed, so the claim is a HOT update (the table keeps room for one on
   * each page, fillfactor 70, migration WebhookClaimLease) and writes no
   * index entry; an attempt's recording clears it.
   */
  @Column({ type: 'timestamptz', nullable: true })
  leasedUntil: Date | null;

  /** Manual retries so far: part of the job id, so a retried delivery gets a new job. */
  @Column({ type: 'int', default: 0 })
  retries: number;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
