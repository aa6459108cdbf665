import { ApiProperty, ApiPropertyOptional, IntersectionType, OmitType, PartialType, PickType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsEmail,
  IsEnum,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUUID,
  MaxLength,
} from 'class-validator';
import { PaginationQueryDto } from '../../common/pagination/pagination';
import { NoLineBreaks, toNormalizedEmail, trimString } from '../../common/validation/validators';
import { ContactDataField } from '../../contacts/dto/validators';
import { IsLiquidTemplate } from '../template-validators';
import { TemplateType } from '../template.entity';

export class CreateTemplateDto {
  @ApiProperty({ maxLength: 200 })
  @Transform(trimString)
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name: string;

  @ApiProperty({ description: 'Liquid; no line breaks', maxLength: 998 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(998)
  @NoLineBreaks()
  @IsLiquidTemplate()
  subject: string;

  @ApiProperty({ description: 'HTML with Liquid', maxLength: 1_000_000 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(1_000_000)
  @IsLiquidTemplate()
  body: string;

  @ApiProperty({ enum: TemplateType, enumName: 'TemplateType' })
  @IsEnum(TemplateType)
  type: TemplateType;

  @ApiPropertyOptional({ type: String, format: 'email', nullable: true, description: 'Default sender; its domain must be verified to send' })
  @IsOptional()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @MaxLength(320)
  from?: string | null;

  @ApiPropertyOptional({ type: String, maxLength: 200, nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @NoLineBreaks()
  fromName?: string | null;

  @ApiPropertyOptional({ type: String, format: 'email', nullable: true })
  @IsOptional()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @MaxLength(320)
  replyTo?: string | null;
}

/** The sender fields may be cleared with null; the others may be left out but never nulled. */
const NULLABLE_FIELDS = ['from', 'fromName', 'replyTo'] as const;

export class UpdateTemplateDto extends IntersectionType(
  PartialType(OmitType(CreateTemplateDto, NULLABLE_FIELDS), { skipNullProperties: false }),
  PartialType(PickType(CreateTemplateDto, NULLABLE_FIELDS)),
) {}

export class ListTemplatesQueryDto extends PaginationQueryDto {
  @ApiPropertyOptional({ enum: TemplateType, enumName: 'TemplateType' })
  @IsOptional()
  @IsEnum(TemplateType)
  type?: TemplateType;

  @ApiPropertyOptional({ description: 'Case-insensitive substring of the name' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  search?: string;
}

export class PreviewTemplateDto {
  @ContactDataField('Variables; they win over the contact data keys. At most 64 KB')
  data?: Record<string, unknown>;

  @ApiPropertyOptional({ format: 'uuid', description: 'Render with this contact\'s data and address' })
  @IsOptional()
  @IsUUID()
  contactId?: string;
}
