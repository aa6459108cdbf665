import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsString, MaxLength, MinLength } from 'class-validator';
import { NoControlCharacters, NotBlank, OptionalNotNull } from '../../common/validation/validators';
import { ContactDataField, ContactEmailField } from '../../contacts/dto/validators';
import { MAX_EVENT_NAME_LENGTH } from '../../events/event-names';
import { NotReservedEvent } from '../../events/dto/event-name.validators';

export class TrackEventDto {
  @ApiProperty({ example: 'ada@example.com' })
  @ContactEmailField()
  email: string;

  @ApiProperty({
    example: 'signup',
    minLength: 1,
    maxLength: MAX_EVENT_NAME_LENGTH,
    description:
      'Names starting email., contact., segment., campaign., domain., workflow. or webhook. are reserved for system events (422 reserved_event)',
  })
  @IsString()
  @MinLength(1)
  @NotBlank()
  @MaxLength(MAX_EVENT_NAME_LENGTH)
  @NotReservedEvent()
  @NoControlCharacters()
  event: string;

  @ApiPropertyOptional({
    description: 'New contacts are subscribed unless false; existing ones change only when given',
  })
  @OptionalNotNull()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField(
    'Stored on the event; merged into contact.data except {"value": x, "persistent": false} values (event only)',
  )
  data?: Record<string, unknown>;
}
