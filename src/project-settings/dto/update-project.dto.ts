import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsObject,
  IsString,
  IsUrl,
  IsUUID,
  MaxLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import {
  IsSenderAddress,
  NameField,
  NoLineBreaks,
  OptionalNotNull,
} from '../../common/validation/validators';
import { MailboxDto } from '../../sending/dto/send-email.dto';

/** PATCH /project {doubleOptIn}: `templateId` and `confirmRedirectUrl` stay as they are when absent; null clears. */
export class DoubleOptInDto {
  @ApiProperty({
    description:
      "POST /v1/subscribe asks for confirmation by email before subscribing; enabling needs the project's defaultFrom (422 otherwise)",
  })
  @IsBoolean()
  enabled: boolean;

  @ApiPropertyOptional({
    type: String,
    format: 'uuid',
    nullable: true,
    description:
      'A template of this project (404 TEMPLATE_NOT_FOUND otherwise) sent as the confirmation; its render context adds confirmUrl. null: the built-in email',
  })
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @IsUUID()
  templateId?: string | null;

  @ApiPropertyOptional({
    type: String,
    format: 'uri',
    maxLength: 2048,
    nullable: true,
    example: 'https://example.com/welcome',
    description:
      'http(s) URL GET /confirm/{token} redirects to (302) instead of showing its page. null: the page',
  })
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @IsString()
  @MaxLength(2048)
  @NoLineBreaks()
  @IsUrl({
    protocols: ['http', 'https'],
    require_protocol: true,
    require_tld: false,
    allow_underscores: true,
  })
  confirmRedirectUrl?: string | null;
}

export class UpdateProjectDto {
  @NameField({ optional: true })
  name?: string;

  @ApiPropertyOptional({
    type: MailboxDto,
    nullable: true,
    description:
      'Sender of mail whose request and template name none ({email, name?}); on a verified domain of the project while REQUIRE_VERIFIED_SENDER holds. null removes it (422 while double opt-in is enabled).',
  })
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @IsObject({ message: 'defaultFrom must be {email, name?} or null' })
  @IsSenderAddress()
  @ValidateNested()
  @Type(() => MailboxDto)
  defaultFrom?: MailboxDto | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: 253,
    example: 'links.example.com',
    description:
      "A host name of yours for the pixel, click and unsubscribe links of the project's mail: publish a CNAME from it to trackingDomain.record.value, then POST /project/tracking-domain/verify. A public host name like a sending domain's (IDN accepted; no scheme, port, path or address). null removes it; a new one starts PENDING.",
  })
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @IsString({ message: 'trackingDomain must be a host name or null' })
  @MaxLength(253)
  trackingDomain?: string | null;
  @ApiPropertyOptional({ type: DoubleOptInDto })
  @OptionalNotNull()
  @IsObject({ message: 'doubleOptIn must be {enabled, templateId?, confirmRedirectUrl?}' })
  @ValidateNested()
  @Type(() => DoubleOptInDto)
  doubleOptIn?: DoubleOptInDto;
}
