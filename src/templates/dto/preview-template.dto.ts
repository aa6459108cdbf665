import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';
import { OptionalNotNull } from '../../common/validation/validators';
import { ContactDataField } from '../../contacts/dto/validators';

export class PreviewTemplateDto {
  @ContactDataField('Variables; they win over the contact data keys. At most 64 KB')
  data?: Record<string, unknown>;

  @ApiPropertyOptional({
    format: 'uuid',
    description: "Render with this contact's data and address",
  })
  @OptionalNotNull()
  @IsUUID()
  contactId?: string;
}
