import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsDefined,
  IsEnum,
  IsOptional,
  IsString,
  IsUUID,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { NameField, NotBlank, OptionalNotNull } from '../../common/validation/validators';
import { WorkflowTriggerType } from '../workflow.entity';

export const STEPS_SCHEMA = {
  type: 'array',
  items: { type: 'object', additionalProperties: true },
  description:
    'Steps, each {id?, type, …}: SEND_EMAIL {templateId}, DELAY {amount, unit}, WAIT_FOR_EVENT {event, timeout:{amount, unit}, then?, else?}, ' +
    'CONDITION {condition, then, else}, UPDATE_CONTACT {data?, subscribed?}, WEBHOOK {url, method, headers?, body?}, EXIT. ' +
    'At most 100 steps, branches nested at most 10 deep; ids 1..64 of [A-Za-z0-9_-], generated when absent and stable across edits. ' +
    'WEBHOOK header values and URL credentials are sealed and answered as `***`; `***` sent back keeps the stored value.',
} as const;

export class WorkflowTriggerDto {
  @ApiProperty({ enum: WorkflowTriggerType, enumName: 'WorkflowTriggerType' })
  @IsEnum(WorkflowTriggerType)
  type: WorkflowTriggerType;

  @ApiPropertyOptional({
    description: 'EVENT: the event name (tracked or system, e.g. email.opened)',
    maxLength: 100,
  })
  @IsOptional()
  @IsString()
  @NotBlank()
  @MaxLength(100)
  event?: string;

  @ApiPropertyOptional({
    format: 'uuid',
    description: 'SEGMENT_ENTRY / SEGMENT_EXIT: a segment of this project',
  })
  @IsOptional()
  @IsUUID('all')
  segmentId?: string;
}

export class CreateWorkflowDto {
  @NameField({ example: 'Welcome series' })
  name: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string | null;

  @ApiPropertyOptional({ description: 'false when absent' })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;

  @ApiProperty({ type: WorkflowTriggerDto })
  @IsDefined()
  @ValidateNested()
  @Type(() => WorkflowTriggerDto)
  trigger: WorkflowTriggerDto;

  @ApiPropertyOptional({
    description:
      'A contact may run it again once its previous execution finished (never two at once); false when absent',
  })
  @OptionalNotNull()
  @IsBoolean()
  allowReentry?: boolean;

  @ApiProperty(STEPS_SCHEMA)
  @IsDefined()
  @IsArray()
  steps: unknown[];
}
