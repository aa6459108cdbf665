import { ApiProperty } from '@nestjs/swagger';
import {
  ExecutionStatus,
  StepRunStatus,
  WorkflowExecution,
  WorkflowExecutionStep,
} from '../workflow.entity';

export class ExecutionStepResponse {
  @ApiProperty() stepId: string;
  @ApiProperty() type: string;
  @ApiProperty({ enum: StepRunStatus, enumName: 'StepRunStatus' }) status: StepRunStatus;
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) output: Record<
    string,
    unknown
  > | null;
  @ApiProperty({ type: String, nullable: true }) error: string | null;
}

export class ExecutionResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) workflowId: string;
  @ApiProperty({ format: 'uuid' }) contactId: string;
  @ApiProperty({ enum: ExecutionStatus, enumName: 'ExecutionStatus' }) status: ExecutionStatus;
  @ApiProperty({ type: String, nullable: true }) currentStepId: string | null;
  @ApiProperty({ type: [ExecutionStepResponse] }) steps: ExecutionStepResponse[];
  @ApiProperty({ format: 'date-time' }) startedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'step_removed, exit_step, cancelled, workflow_deleted, or the failure',
  })
  exitReason: string | null;
}

const iso = (d: Date | string | null): string | null =>
  d === null ? null : new Date(d).toISOString();

export function toExecutionResponse(
  row: WorkflowExecution,
  steps: WorkflowExecutionStep[],
): ExecutionResponse {
  return {
    id: row.id,
    workflowId: row.workflowId,
    contactId: row.contactId,
    status: row.status,
    currentStepId: row.currentStepId,
    steps: steps.map((s) => ({
      stepId: s.stepId,
      type: s.type,
      status: s.status,
      startedAt: iso(s.startedAt) as string,
      finishedAt: iso(s.finishedAt),
      output: s.output,
      error: s.error,
    })),
    startedAt: iso(row.startedAt) as string,
    finishedAt: iso(row.finishedAt),
    exitReason: row.exitReason,
  };
}
