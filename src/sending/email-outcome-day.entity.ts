import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Outcomes of a project's mail per UTC day of its outcome time (`COALESCE(sent_at, bounced_at)`),
 * which GET /project/stats sums instead of scanning the emails of its window: how many went out
 * (or were refused), and of those how many were opened, clicked, bounced and complained about.
 * A statement-level trigger on `emails` adds each statement's net change in the same transaction
 * (migration EmailOutcomeDays), so the sums equal a count of the emails in any snapshot; each
 * backend writes its own slot (`pg_backend_pid()`, as StatusCounter), and `compact_counters()`
 * folds the slots of gone backends into slot 0. Dropping old emails leaves the days as they were.
 */
@Entity('email_outcome_days')
export class EmailOutcomeDay {
  @PrimaryColumn('uuid')
  projectId: string;

  @PrimaryColumn('date')
  day: string;

  @PrimaryColumn('integer')
  slot: number;

  @Column({ type: 'integer', default: 0 }) sent: number;
  @Column({ type: 'integer', default: 0 }) opened: number;
  @Column({ type: 'integer', default: 0 }) clicked: number;
  @Column({ type: 'integer', default: 0 }) bounced: number;
  @Column({ type: 'integer', default: 0 }) complained: number;
}
