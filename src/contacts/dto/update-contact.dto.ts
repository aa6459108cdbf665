import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';
import { OptionalNotNull } from '../../common/validation/validators';
import { ContactDataField, ContactEmailField } from './validators';

export class UpdateContactDto {
  @ApiPropertyOptional({
    example: 'ada@example.com',
    description:
      'A new address: trimmed and lower-cased like on create; 409 when another contact of the project has it. Past email records keep the address they were sent to',
  })
  @OptionalNotNull()
  @ContactEmailField()
  email?: string;

  @ApiPropertyOptional()
  @OptionalNotNull()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField('Merged into the stored data (top-level keys); a key set to null is removed')
  data?: Record<string, unknown>;
}
