import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';
import { OptionalNotNull } from '../../common/validation/validators';
import { ContactDataField, ContactEmailField } from './validators';

export class CreateContactDto {
  @ApiProperty({
    example: 'ada@example.com',
    description: 'Trimmed and lower-cased; unique per project',
  })
  @ContactEmailField()
  email: string;

  // The default is stated in words: generators (openapi-typescript 7) make a property with `default` required in requests.
  @ApiPropertyOptional({ description: 'Defaults to true' })
  @OptionalNotNull()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField('Free-form, at most 64 KB')
  data?: Record<string, unknown>;
}
