import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsDefined,
  IsEmail,
  IsEnum,
  IsOptional,
  IsString,
  IsUUID,
  MaxLength,
} from 'class-validator';
import {
  NameField,
  NullableDisplayNameField,
  NullableEmailField,
  OptionalNotNull,
  toNormalizedEmail,
  IsSenderAddress,
} from '../../common/validation/validators';
import { CONDITION_SCHEMA } from '../../segments/dto/condition-schema';
import { LiquidBodyField, LiquidSubjectField } from '../../templates/template-validators';
import { AudienceType } from '../campaign.entity';

/**
 * The spec's create body plus trackOpens/trackClicks. `segmentId` and
 * `audienceFilter` are checked against `audienceType` by the service (422 on
 * the field), the filter by the condition language's own validator.
 */
export class CreateCampaignDto {
  @NameField({ example: 'November newsletter' })
  name: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string | null;

  @LiquidSubjectField('News for {{ firstName | default: "you" }}')
  subject: string;

  @LiquidBodyField()
  body: string;

  @ApiProperty({
    format: 'email',
    description: 'Sender; its domain must be verified while REQUIRE_VERIFIED_SENDER holds',
  })
  @Transform(toNormalizedEmail)
  @IsEmail()
  @IsSenderAddress()
  @MaxLength(320)
  from: string;

  @NullableDisplayNameField()
  fromName?: string | null;

  @NullableEmailField()
  replyTo?: string | null;

  @ApiProperty({ enum: AudienceType, enumName: 'AudienceType' })
  @IsEnum(AudienceType)
  audienceType: AudienceType;

  @ApiPropertyOptional({
    type: String,
    format: 'uuid',
    nullable: true,
    description: 'Required for SEGMENT: a segment of this project',
  })
  @IsOptional()
  @IsUUID()
  segmentId?: string | null;

  @ApiPropertyOptional({
    ...CONDITION_SCHEMA,
    nullable: true,
    description: `Required for FILTERED. ${CONDITION_SCHEMA.description}`,
  })
  @IsOptional()
  @IsDefined()
  audienceFilter?: unknown;

  @ApiPropertyOptional({ description: 'Open pixel in every message (true when absent)' })
  @OptionalNotNull()
  @IsBoolean()
  trackOpens?: boolean;

  @ApiPropertyOptional({
    description: 'Links rewritten through the click redirect (true when absent)',
  })
  @OptionalNotNull()
  @IsBoolean()
  trackClicks?: boolean;
}
