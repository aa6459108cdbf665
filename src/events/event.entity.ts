import {
  BeforeInsert,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
} from 'typeorm';
import { newId } from '../database/id';

/**
 * Something that happened to a contact: a tracked event (POST /v1/track) or a
 * system event (`email.sent`, `contact.unsubscribed`, ...). Erased with its contact.
 *
 * Indexes: (project_id, created_at) for the unfiltered list, (project_id, name,
 * created_at) for name filters, segment event rules and /events/names fallbacks,
 * and (contact_id, created_at) for a contact's timeline. The last one leads with
 * contact_id rather than project_id: contact ids are globally unique, so it is
 * as selective, and it is the index the ON DELETE CASCADE from contacts needs.
 *
 * Partitioned by month of created_at (docs/scaling.md, "Partitions and
 * retention"), so the primary key carries it.
 */
@Entity('events')
@Index('events_project_id_created_at_idx', ['projectId', 'createdAt'])
@Index('events_project_id_name_created_at_idx', ['projectId', 'name', 'createdAt'])
@Index('events_contact_id_created_at_idx', ['contactId', 'createdAt'])
export class Event {
  // Not BaseEntity: TypeORM keeps a base class's column over a subclass's, and this primary key carries created_at.
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_events_id_created_at' })
  id: string;

  @CreateDateColumn({
    type: 'timestamptz',
    primary: true,
    primaryKeyConstraintName: 'PK_events_id_created_at',
  })
  createdAt: Date;

  @BeforeInsert()
  assignId(): void {
    if (!this.id) this.id = newId();
  }

  @Column('uuid')
  projectId: string;

  /** null for events about the project rather than a contact (`campaign.*`). */
  @Column({ type: 'uuid', nullable: true })
  contactId: string | null;

  /**
   * The contact, named rather than imported: the event store sits below
   * contacts (which records its subscription events through it). Not a
   * foreign key: triggers check it and cascade a contact's deletion, so a
   * month is dropped without locking contacts (migration
   * ContactReferencesByTrigger).
   */
  @ManyToOne('Contact', { createForeignKeyConstraints: false })
  @JoinColumn({ name: 'contact_id' })
  contact?: unknown;

  /** The email record this event is about (email.* events). No FK: emails belong to the sending feature. */
  @Column({ type: 'uuid', nullable: true })
  emailId: string | null;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  data: Record<string, unknown>;
}
