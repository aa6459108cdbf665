import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsUUID, MaxLength } from 'class-validator';
import { OptionalNotNull, toNormalizedEmail } from '../../common/validation/validators';
import { ContactDataField } from '../../contacts/dto/validators';

/** A manual start: `contactId` or `email` (the contact is created when the email is new), and data as a track's. */
export class StartExecutionDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @OptionalNotNull()
  @IsUUID('all')
  contactId?: string;

  @ApiPropertyOptional({ format: 'email' })
  @OptionalNotNull()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @MaxLength(320)
  email?: string;

  @ContactDataField(
    'Taken as a track\'s data: merged into contact.data, except {"value": x, "persistent": false} values, kept on the execution as render variables of its steps',
  )
  data?: Record<string, unknown>;
}
