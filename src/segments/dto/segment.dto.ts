import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsNotEmpty, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';

const CONDITION_SCHEMA = {
  type: 'object',
  additionalProperties: true,
  description:
    'A group {logic: "AND"|"OR", conditions: [rule | group, ...]}, up to 5 levels and 50 rules. ' +
    'Rules: {field, operator, value?}; see docs/segments.md for fields and operators.',
  example: {
    logic: 'AND',
    conditions: [
      { field: 'data.plan', operator: 'equals', value: 'pro' },
      { field: 'event.purchase', operator: 'triggeredWithin', value: { amount: 7, unit: 'days' } },
    ],
  },
} as const;

function trimString({ value }: { value: unknown }): unknown {
  return typeof value === 'string' ? value.trim() : value;
}

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

export class UpdateSegmentDto {
  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @Transform(trimString)
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: 1000,
    description: 'null removes the description',
  })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string | null;

  @ApiPropertyOptional(CONDITION_SCHEMA)
  @IsOptional()
  condition?: unknown;
}

export class PreviewSegmentDto {
  @ApiProperty(CONDITION_SCHEMA)
  @IsDefined()
  condition: unknown;
}

/** Path `{id}`: anything but a UUID is a 400 naming the parameter. */
export class SegmentIdParamDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all')
  id: string;
}
