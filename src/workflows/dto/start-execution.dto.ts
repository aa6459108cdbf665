import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsObject, IsUUID, MaxLength } from 'class-validator';
import { MaxJsonSize, OptionalNotNull, toNormalizedEmail } from '../../common/validation/validators';

/** A manual start: `contactId` or `email` (the contact is created when the email is new), and variables. */
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

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Variables for the steps (templates, webhook bodies)' })
  @OptionalNotNull()
  @IsObject()
  @MaxJsonSize(65_536)
  data?: Record<string, unknown>;
}
