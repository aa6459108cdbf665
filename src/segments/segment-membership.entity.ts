import {
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  PrimaryGeneratedColumn,
} from 'typeorm';
import { Contact } from '../contacts/contact.entity';
import { Segment } from './segment.entity';

/**
 * Live membership of a kept segment (one an enabled SEGMENT_ENTRY/SEGMENT_EXIT
 * workflow names; `segments.membership_kept_at` is set): one row per member.
 * Written only by SegmentMembershipService (the baseline when a segment
 * becomes kept, the evaluator afterwards). Erased with its segment or contact.
 */
@Entity('segment_memberships')
// The ON DELETE CASCADE from contacts, and a contact's memberships.
@Index('segment_memberships_contact_id_idx', ['contactId'])
export class SegmentMembership {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'segment_memberships_pkey' })
  segmentId: string;

  @ManyToOne(() => Segment, { onDelete: 'CASCADE' })
  @JoinColumn({
    name: 'segment_id',
    foreignKeyConstraintName: 'segment_memberships_segment_id_fkey',
  })
  segment?: Segment;

  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'segment_memberships_pkey' })
  contactId: string;

  @ManyToOne(() => Contact, { onDelete: 'CASCADE' })
  @JoinColumn({
    name: 'contact_id',
    foreignKeyConstraintName: 'segment_memberships_contact_id_fkey',
  })
  contact?: Contact;

  /** The segment's project (denormalised: counts and drops never join segments). */
  @Column('uuid')
  projectId: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  enteredAt: Date;
}

/**
 * Contacts whose membership must be re-evaluated: an append-only queue written
 * by the triggers of the SegmentMembership migration in the transaction of the
 * change (contacts INSERT/UPDATE, events INSERT except `segment.*`), only for
 * projects with a kept segment, and by the sweep for the differences it finds.
 * The evaluator deletes a row in the transaction that applies its result.
 * Append-only (no unique contact id), so a marking never waits on a row the
 * evaluator holds; the evaluator folds duplicates.
 */
@Entity('segment_membership_dirty')
export class SegmentMembershipDirty {
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'segment_membership_dirty_pkey',
  })
  id: string;

  /** No foreign key: a row of an erased contact is simply dropped by the evaluator. */
  @Column('uuid')
  contactId: string;

  @Column('uuid')
  projectId: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  markedAt: Date;
}
