import { ApiProperty } from '@nestjs/swagger';
import { IsDefined } from 'class-validator';
import { CONDITION_SCHEMA } from './condition-schema';

export class PreviewSegmentDto {
  @ApiProperty(CONDITION_SCHEMA)
  @IsDefined()
  condition: unknown;
}
