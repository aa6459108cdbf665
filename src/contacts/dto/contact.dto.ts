import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { MAX_CONTACT_DATA_BYTES } from '../contact-data';
import {
  IsContactEmail,
  IsJsonObject,
  MaxJsonSize,
  rawJsonValue,
  toBooleanQuery,
  trimString,
} from './validators';

export class CreateContactDto {
  @ApiProperty({
    example: 'ada@example.com',
    description: 'Trimmed and lower-cased; unique per project',
  })
  @Transform(trimString)
  @IsString()
  @MaxLength(320)
  @IsContactEmail()
  email: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Free-form, at most 64 KB',
  })
  @IsOptional()
  @Transform(rawJsonValue)
  @IsJsonObject()
  @MaxJsonSize(MAX_CONTACT_DATA_BYTES)
  data?: Record<string, unknown>;
}

export class UpdateContactDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Merged into the stored data (top-level keys); a key set to null is removed',
  })
  @IsOptional()
  @Transform(rawJsonValue)
  @IsJsonObject()
  @MaxJsonSize(MAX_CONTACT_DATA_BYTES)
  data?: Record<string, unknown>;
}

export class ListContactsQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ type: Boolean })
  @IsOptional()
  @Transform(toBooleanQuery)
  @IsBoolean()
  subscribed?: boolean;

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the email' })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  search?: string;

  @ApiPropertyOptional({ description: 'Exact email (normalised before matching)' })
  @IsOptional()
  @IsString()
  @MaxLength(320)
  email?: string;
}

/** Path `{id}`: anything but a UUID is a 400 naming the parameter, never a 500. */
export class IdParamDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all')
  id: string;
}
