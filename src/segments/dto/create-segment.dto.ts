import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { trimString } from '../../common/validation/validators';
import { CONDITION_SCHEMA } from './condition-schema';

/**
 * `condition` is free-form JSON checked by the condition language's own
 * validator (ConditionsService), which reports paths into it; the DTO only
 * says it must be there.
 */
export class CreateSegmentDto {
  @ApiProperty({ example: 'Active pro customers', maxLength: 200 })
  @Transform(trimString)
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
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
