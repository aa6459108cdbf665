import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsEnum, IsOptional, MaxLength } from 'class-validator';
import {
  NameField,
  NullableDisplayNameField,
  NullableEmailField,
  OptionalNotNull,
  toNormalizedEmail,
  IsSenderAddress,
} from '../../common/validation/validators';
import { LiquidBodyField, LiquidSubjectField } from '../template-validators';
import { TemplateType } from '../template.entity';

export class CreateTemplateDto {
  @NameField()
  name: string;

  @LiquidSubjectField()
  subject: string;

  @LiquidBodyField()
  body: string;

  @ApiProperty({ enum: TemplateType, enumName: 'TemplateType' })
  @IsEnum(TemplateType)
  type: TemplateType;

  @ApiPropertyOptional({
    type: String,
    format: 'email',
    nullable: true,
    description: 'Default sender; its domain must be verified to send',
  })
  @IsOptional()
  @Transform(toNormalizedEmail)
  @IsEmail()
  @IsSenderAddress()
  @MaxLength(320)
  from?: string | null;

  @NullableDisplayNameField()
  fromName?: string | null;

  @NullableEmailField()
  replyTo?: string | null;

  @ApiPropertyOptional({
    description:
      'Track opens and clicks of TRANSACTIONAL mail sent with this template (false when absent; MARKETING mail is always tracked)',
  })
  @OptionalNotNull()
  @IsBoolean()
  track?: boolean;
}
