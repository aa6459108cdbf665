import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

import { IsDefined, IsOptional, IsString, MaxLength } from 'class-validator';
import { NameField } from '../../common/validation/validators';
import { CONDITION_SCHEMA } from './condition-schema';

/**
 * `condition` is free-form JSON checked by the condition language's own
 * validator (ConditionsService), which reports paths into it; the DTO only
 * says it must be there.
 */
export class CreateSegmentDto {
  @NameField({ example: 'Active pro customers' })
  name: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string | null;

  @ApiProperty(CONDITION_SCHEMA)
  @IsDefined()
  condition: unknown;
}
