import { Column, Entity, Index, UpdateDateColumn } from 'typeorm';
import { BaseEntity } from '../database/base.entity';

export enum TemplateType {
  TRANSACTIONAL = 'TRANSACTIONAL',
  MARKETING = 'MARKETING',
}

@Entity('templates')
@Index(['projectId', 'type'])
export class Template extends BaseEntity {
  @Index()
  @Column({ type: 'uuid' })
  projectId: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'text' })
  subject: string;

  @Column({ type: 'text' })
  body: string;

  @Column({ type: 'enum', enum: TemplateType, enumName: 'template_type' })
  type: TemplateType;

  /** API field `from`; `from` is a reserved word in SQL. */
  @Column({ type: 'varchar', length: 320, nullable: true })
  fromEmail: string | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  fromName: string | null;

  @Column({ type: 'varchar', length: 320, nullable: true })
  replyTo: string | null;

  /** Track opens and clicks of TRANSACTIONAL mail from this template (MARKETING mail is always tracked). */
  @Column({ type: 'boolean', default: false })
  track: boolean;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
