import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { OptionalNotNull, trimString } from '../../common/validation/validators';
import { CONDITION_SCHEMA } from './condition-schema';

export class UpdateSegmentDto {
  @ApiPropertyOptional({ maxLength: 200 })
  @OptionalNotNull()
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
  @OptionalNotNull()
  condition?: unknown;
}
