import { Column, Entity, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';

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

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
