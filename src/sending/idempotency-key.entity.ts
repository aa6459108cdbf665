import { Column, Entity, Index } from 'typeorm';
import { BaseEntity } from '../database/base.entity';

/**
 * One Idempotency-Key of POST /v1/send. The row is inserted in the same
 * transaction as the emails it produced, so a stored response always matches
 * committed work, and a concurrent duplicate blocks on the unique index until
 * the first request commits (then replays it) or rolls back (then does the
 * work itself). Rows older than 24 h are taken over by a new request.
 */
@Entity('idempotency_keys')
@Index('idempotency_keys_project_id_key_key', ['projectId', 'key'], { unique: true })
@Index('idempotency_keys_created_at_idx', ['createdAt'])
export class IdempotencyKey extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @Column({ type: 'varchar', length: 255 })
  key: string;

  /** SHA-256 of the canonical JSON of the request body. */
  @Column({ type: 'char', length: 64 })
  requestHash: string;

  @Column({ type: 'smallint', nullable: true })
  responseStatus: number | null;

  @Column({ type: 'jsonb', nullable: true })
  responseBody: unknown;
}
