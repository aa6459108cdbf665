import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';
import { OptionalNotNull } from '../../common/validation/validators';
import { ContactDataField } from './validators';

export class UpdateContactDto {
  @ApiPropertyOptional()
  @OptionalNotNull()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField('Merged into the stored data (top-level keys); a key set to null is removed')
  data?: Record<string, unknown>;
}
