import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Project } from '../projects/project.entity';

/**
 * Running totals behind GET /events/names, maintained by statement-level
 * triggers on `events` (see the Contacts migration), so the endpoint never
 * aggregates millions of events. Each (project, name) is spread over a few
 * shard rows so concurrent inserts of the same event name do not queue on one
 * row lock; readers sum the shards.
 */
@Entity('event_name_stats')
export class EventNameStat {
  @PrimaryColumn('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @PrimaryColumn({ type: 'varchar', length: 100 })
  name: string;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  count: string;

  @Column({ type: 'timestamptz', nullable: true })
  lastSeenAt: Date | null;
}
