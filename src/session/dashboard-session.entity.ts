import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { ApiKey } from '../projects/api-key.entity';

/**
 * A dashboard sign-in: acts as the secret key it was started with until it is idle for 12 hours,
 * signed out, or the key is revoked. Its statements are in common/auth
 * (DashboardSessionsRepository), which the per-request guard uses.
 */
@Entity('dashboard_sessions')
export class DashboardSession extends BaseEntity {
  /** SHA-256 of the cookie's value; the value itself is never stored. */
  @Index({ unique: true })
  @Column({ type: 'bytea' })
  tokenHash: Buffer;

  @Index()
  @Column('uuid')
  apiKeyId: string;

  @ManyToOne(() => ApiKey, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'api_key_id' })
  apiKey?: ApiKey;

  /** Slides forward on use (SESSION_IDLE_SECONDS). */
  @Index()
  @Column({ type: 'timestamptz' })
  expiresAt: Date;
}
