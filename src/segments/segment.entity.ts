import { Column, Entity, Index, JoinColumn, ManyToOne, UpdateDateColumn } from 'typeorm';
import type { ConditionGroup } from '../conditions/condition.types';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';

/**
 * A saved condition. `memberCount` is a cache of the live count (see
 * SegmentsService.MEMBER_COUNT_TTL_MS); membership itself is never stored,
 * it is the compiled condition evaluated when asked.
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

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
