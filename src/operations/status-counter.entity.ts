import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Global record counts by status (and source, for emails) that GET /metrics
 * reads instead of counting the tables: statement-level triggers on `emails`,
 * `webhook_deliveries`, `campaigns` and `workflow_executions` add each
 * statement's net change in the same transaction (migration StatusCounters),
 * so the sum over a key's slots equals a count(*) in any snapshot. A trigger
 * writes the slot of its own backend (`pg_backend_pid()`), so concurrent
 * transactions never wait on, or deadlock over, a counter row; slot 0 holds
 * what `compact_counters()` folded in from backends that have gone.
 */
@Entity('status_counters')
export class StatusCounter {
  /** The table counted: emails, webhook_deliveries, campaigns, workflow_executions. */
  @PrimaryColumn({ type: 'varchar', length: 32 })
  family: string;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  status: string;

  /** The email source; '' for the tables without one. */
  @PrimaryColumn({ type: 'varchar', length: 32 })
  source: string;

  @PrimaryColumn('integer')
  slot: number;

  @Column({ type: 'bigint', default: 0 })
  n: string;
}
