import { ApiPropertyOptional, IntersectionType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { toBooleanQuery } from '../../common/validation/validators';

/** The contact list's filters: GET /contacts and GET /contacts/export select alike. */
export class ContactFiltersQueryDto {
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

export class ListContactsQueryDto extends IntersectionType(
  PaginationQueryDto,
  ContactFiltersQueryDto,
) {}
