import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, ValidateIf, ValidateNested } from 'class-validator';
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
}
