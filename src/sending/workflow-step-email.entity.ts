import { Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

/**
 * One row per workflow step that made an email: the unique rule "one email
 * per step of an execution", which cannot be a unique index of the
 * partitioned `emails`. A statement trigger on emails writes it, so a
 * second email for the same step is a unique violation as before. It goes
 * with its execution (the entity is named, not imported: workflows sit above
 * sending).
 */
@Entity('workflow_step_emails')
export class WorkflowStepEmail {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_workflow_step_emails' })
  workflowExecutionId: string;

  @PrimaryColumn({
    type: 'varchar',
    length: 64,
    primaryKeyConstraintName: 'PK_workflow_step_emails',
  })
  workflowStepId: string;

  @ManyToOne('WorkflowExecution', { onDelete: 'CASCADE' })
  @JoinColumn({
    name: 'workflow_execution_id',
    foreignKeyConstraintName: 'FK_workflow_step_emails_execution',
  })
  execution?: unknown;
}
