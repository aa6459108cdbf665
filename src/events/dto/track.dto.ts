import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { MAX_CONTACT_DATA_BYTES } from '../../contacts/contact-data';
import {
  IsContactEmail,
  IsJsonObject,
  MaxJsonSize,
  NoControlCharacters,
  rawJsonValue,
  NotReservedEvent,
  trimString,
} from '../../contacts/dto/validators';
import { MAX_EVENT_NAME_LENGTH } from '../event-names';

export class TrackEventDto {
  @ApiProperty({ example: 'ada@example.com' })
  @Transform(trimString)
  @IsString()
  @MaxLength(320)
  @IsContactEmail()
  email: string;

  @ApiProperty({
    example: 'signup',
    minLength: 1,
    maxLength: MAX_EVENT_NAME_LENGTH,
    description: 'Names starting email., contact. or segment. are reserved for system events',
  })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_EVENT_NAME_LENGTH)
  @NotReservedEvent()
  @NoControlCharacters()
  event: string;

  @ApiPropertyOptional({
    description: 'New contacts are subscribed unless false; existing ones change only when given',
  })
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'Stored on the event; merged into contact.data except {"value": x, "persistent": false} values (event only)',
  })
  @IsOptional()
  @Transform(rawJsonValue)
  @IsJsonObject()
  @MaxJsonSize(MAX_CONTACT_DATA_BYTES)
  data?: Record<string, unknown>;
}

export class TrackResultView {
  @ApiProperty({ format: 'uuid', description: 'contact id' })
  contact: string;

  @ApiProperty({ format: 'uuid', description: 'event id' })
  event: string;

  @ApiProperty({ format: 'date-time' })
  timestamp: string;
}
