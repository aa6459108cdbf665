import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional } from 'class-validator';
import { ContactDataField } from './validators';

export class UpdateContactDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField('Merged into the stored data (top-level keys); a key set to null is removed')
  data?: Record<string, unknown>;
}
