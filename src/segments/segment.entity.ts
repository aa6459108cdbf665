import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import type { ConditionGroup } from '../conditions/condition.types';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

/**
 * A saved condition. `memberCount` is a cache of the live count (see
 * SegmentsService.MEMBER_COUNT_TTL_MS). Membership is the compiled condition
 * evaluated when asked, except for kept segments (`membershipKeptAt` set: an
 * enabled SEGMENT_ENTRY/SEGMENT_EXIT workflow names them), whose members are
 * stored in `segment_memberships` and kept live (SegmentMembershipService).
 */
@Entity('segments')
// Keyset pagination (newest first by UUIDv7 id) within a project.
@Index('segments_project_id_id_idx', ['projectId', 'id'])
export class Segment extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'jsonb' })
  condition: ConditionGroup;

  /**
   * Segments named by membership rules of `condition` (direct references
   * only). Deleting a referenced segment is refused, and cycle checks walk
   * this column instead of parsing every condition.
   */
  @Index('segments_segment_refs_idx', { synchronize: false })
  @Column({ type: 'uuid', array: true, default: () => "'{}'" })
  segmentRefs: string[];

  /** Cached member count and when it was counted; null until first counted or after the condition changed. */
  @Column({ type: 'integer', nullable: true })
  memberCount: number | null;

  @Column({ type: 'timestamptz', nullable: true })
  memberCountAt: Date | null;

  /**
   * Since when the membership is kept (SegmentMembershipService.keep), or
   * null: stored members, entered/exited events, memberCount from the rows.
   * Partial index (project_id) WHERE it is set, hand-written in the
   * SegmentMembership migration: the dirty-marking triggers' "does this
   * project keep a segment?" probe, an index with no entries while no
   * workflow uses a segment.
   */
  @Index('segments_membership_kept_idx', { synchronize: false })
  @Column({ type: 'timestamptz', nullable: true })
  membershipKeptAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
