import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { ApiKeyType } from '../common/auth/api-key.crypto';
import { Project } from './project.entity';

/** Only the SHA-256 of a key is stored; the key itself is shown once, at creation. */
@Entity('api_keys')
export class ApiKey extends BaseEntity {
  @Index()
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @Column({ type: 'enum', enum: ApiKeyType, enumName: 'api_key_type' })
  type: ApiKeyType;

  /** `sk_AbCd…`: enough to recognise a key in a listing, useless to an attacker. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  @Index({ unique: true })
  @Column({ type: 'bytea' })
  hash: Buffer;

  /** A label given at creation (POST /project/keys), so a listing says which key is which. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  name: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}
