import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Project } from '../projects/project.entity';

/**
 * Running totals behind GET /events/names and GET /events' total, maintained
 * by statement-level triggers on `events` (migration EventNameStatsMonth), so
 * the endpoints never aggregate millions of events. Each (project, name) is
 * counted per month of the events' created_at (the month of the `events`
 * partition that holds them), so that dropping a month under retention
 * deletes that month's rows instead of counting its events; and spread over
 * a few shard rows so concurrent inserts of the same event name do not queue
 * on one row lock. Readers sum the months and the shards.
 */
@Entity('event_name_stats')
@Index('event_name_stats_month_idx', ['month'])
export class EventNameStat {
  @PrimaryColumn('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @PrimaryColumn({ type: 'varchar', length: 100 })
  name: string;

  /** The first day of the events' UTC month. */
  @PrimaryColumn({ type: 'date' })
  month: string;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  count: string;

  @Column({ type: 'timestamptz', nullable: true })
  lastSeenAt: Date | null;
}
