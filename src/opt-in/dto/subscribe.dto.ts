import { ApiProperty } from '@nestjs/swagger';
import { ContactDataField, ContactEmailField } from '../../contacts/dto/validators';

export class SubscribeDto {
  @ApiProperty({ example: 'ada@example.com' })
  @ContactEmailField()
  email: string;

  @ContactDataField(
    'Merged into contact.data (as in POST /v1/track; {"value": x, "persistent": false} values are left out)',
  )
  data?: Record<string, unknown>;
}
