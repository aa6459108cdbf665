import { ApiPropertyOptional } from '@nestjs/swagger';

import { IsOptional, IsString, MaxLength } from 'class-validator';
import { NameField, OptionalNotNull } from '../../common/validation/validators';
import { CONDITION_SCHEMA } from './condition-schema';

export class UpdateSegmentDto {
  @NameField({ optional: true })
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
