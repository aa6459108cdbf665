import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A workflow's executions by status as counters, so its stats cost a few
 * rows whatever its history: a statement-level trigger on
 * `workflow_executions` adds each statement's net change per workflow in the
 * same transaction (engine batches, cancel, step_removed exits, the events
 * trigger's starts and resumes, cascaded deletes; migration StatusCounters).
 * A trigger writes the slot of its own backend (`pg_backend_pid()`), so
 * concurrent batches never wait on or deadlock over a counter row; slot 0
 * holds what `compact_counters()` folded in from backends that have gone.
 * Only the sums over a workflow's slots mean something. No foreign key on
 * purpose: its check would take a KEY SHARE lock on the workflow row inside
 * engine batches; compact_counters() drops the rows of workflows gone.
 */
@Entity('workflow_counters')
export class WorkflowCounter {
  @PrimaryColumn('uuid')
  workflowId: string;

  @PrimaryColumn('integer')
  slot: number;

  @Column({ type: 'int', default: 0 }) running: number;
  @Column({ type: 'int', default: 0 }) waiting: number;
  @Column({ type: 'int', default: 0 }) completed: number;
  @Column({ type: 'int', default: 0 }) exited: number;
  @Column({ type: 'int', default: 0 }) failed: number;
  @Column({ type: 'int', default: 0 }) cancelled: number;
}
