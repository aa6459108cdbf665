import { ApiProperty } from '@nestjs/swagger';
import type { ExecutionCounts } from '../workflow-executions.repository';
import { Workflow, WorkflowTriggerType } from '../workflow.entity';
import { maskSteps } from '../workflow-step-secrets';
import { STEPS_SCHEMA } from './create-workflow.dto';

export class WorkflowTriggerResponse {
  @ApiProperty({ enum: WorkflowTriggerType, enumName: 'WorkflowTriggerType' })
  type: WorkflowTriggerType;
  @ApiProperty({ type: String, nullable: true }) event: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) segmentId: string | null;
}

export class WorkflowStatsResponse {
  @ApiProperty({ type: 'integer', minimum: 0 }) running: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) waiting: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) completed: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) exited: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) failed: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) cancelled: number;
}

export class WorkflowResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ type: WorkflowTriggerResponse }) trigger: WorkflowTriggerResponse;
  @ApiProperty() allowReentry: boolean;
  @ApiProperty(STEPS_SCHEMA) steps: unknown[];
  @ApiProperty({ type: WorkflowStatsResponse, description: 'Executions by status' })
  stats: WorkflowStatsResponse;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class WorkflowWithSecretResponse extends WorkflowResponse {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description:
      'The secret that signs WEBHOOK calls (Standard Webhooks headers); shown in this answer only',
  })
  secret: string;
}

export function toWorkflowResponse(row: Workflow, stats: ExecutionCounts): WorkflowResponse {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    enabled: row.enabled,
    trigger: { type: row.triggerType, event: row.triggerEvent, segmentId: row.triggerSegmentId },
    allowReentry: row.allowReentry,
    steps: maskSteps(row.steps),
    stats,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
