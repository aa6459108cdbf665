import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, IsUUID, MaxLength } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { toBooleanQuery } from '../../common/validation/validators';
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
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField('Free-form, at most 64 KB')
  data?: Record<string, unknown>;
}

export class UpdateContactDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  subscribed?: boolean;

  @ContactDataField('Merged into the stored data (top-level keys); a key set to null is removed')
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
