import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, IsUUID, MaxLength } from 'class-validator';
import { NoLineBreaks, NotBlank, OptionalNotNull } from '../../common/validation/validators';
import { ContactDataField } from '../../contacts/dto/validators';
import { IsLiquidTemplate } from '../template-validators';

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

  // An editor previews what is being typed without saving it (the dashboard's live preview).
  @ApiPropertyOptional({
    maxLength: 998,
    description:
      'Render this subject instead of the stored one (an unsaved edit); same rules as on save',
  })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(998)
  @NoLineBreaks()
  @IsLiquidTemplate()
  subject?: string;

  @ApiPropertyOptional({
    maxLength: 1_000_000,
    description:
      'Render this body instead of the stored one (an unsaved edit); same rules as on save',
  })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(1_000_000)
  @IsLiquidTemplate()
  body?: string;
}
