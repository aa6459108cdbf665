import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { IsSenderAddress, NameField } from '../../common/validation/validators';
import { MailboxDto } from '../../sending/dto/send-email.dto';

export class UpdateProjectDto {
  @NameField({ optional: true })
  name?: string;

  @ApiPropertyOptional({
    type: MailboxDto,
    nullable: true,
    description:
      'Sender of mail whose request and template name none ({email, name?}); on a verified domain of the project while REQUIRE_VERIFIED_SENDER holds. null removes it.',
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
}
