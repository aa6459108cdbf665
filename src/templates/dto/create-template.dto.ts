import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsEnum, IsOptional, IsString, MaxLength } from 'class-validator';
import { NameField, NoLineBreaks, NotBlank, OptionalNotNull, toNormalizedEmail } from '../../common/validation/validators';
import { IsLiquidTemplate } from '../template-validators';
import { TemplateType } from '../template.entity';

export class CreateTemplateDto {
  @NameField()
  name: string;

  @ApiProperty({ description: 'Liquid; no line breaks; not only whitespace', maxLength: 998 })
  @IsString()
  @NotBlank()
  @MaxLength(998)
  @NoLineBreaks()
  @IsLiquidTemplate()
  subject: string;

  @ApiProperty({ description: 'HTML with Liquid; not only whitespace', maxLength: 1_000_000 })
  @IsString()
  @NotBlank()
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
  @NotBlank()
  @MaxLength(200)
  @NoLineBreaks()
  fromName?: string | null;

  @ApiPropertyOptional({ type: String, format: 'email', nullable: true })
  @IsOptional()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @MaxLength(320)
  replyTo?: string | null;

  @ApiPropertyOptional({
    description: 'Track opens and clicks of TRANSACTIONAL mail sent with this template (false when absent; MARKETING mail is always tracked)',
  })
  @OptionalNotNull()
  @IsBoolean()
  track?: boolean;
}
