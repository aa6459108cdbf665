import { Column, Entity, JoinColumn, ManyToOne } from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

/**
 * Content shared by many email records and rendered at delivery, once per
 * recipient: a campaign's subject and body, frozen when it starts sending.
 * Immutable once written, so a delivery worker may cache it by id.
 */
@Entity('email_contents')
export class EmailContent extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  /** Liquid. */
  @Column({ type: 'text' })
  subject: string;

  /** HTML with Liquid. */
  @Column({ type: 'text' })
  body: string;
}
