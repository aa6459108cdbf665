import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsOptional,
  IsString,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { NameField, OptionalNotNull } from '../../common/validation/validators';
import { STEPS_SCHEMA, WorkflowTriggerDto } from './create-workflow.dto';

/** Every field optional; `steps` applies to executions in flight (see the README). */
export class UpdateWorkflowDto {
  @NameField({ optional: true })
  name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string | null;

  @ApiPropertyOptional()
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ type: WorkflowTriggerDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => WorkflowTriggerDto)
  trigger?: WorkflowTriggerDto;

  @ApiPropertyOptional()
  @OptionalNotNull()
  @IsBoolean()
  allowReentry?: boolean;

  @ApiPropertyOptional(STEPS_SCHEMA)
  @OptionalNotNull()
  @IsArray()
  steps?: unknown[];
}
