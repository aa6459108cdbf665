import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsNotEmpty, IsObject, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { trimString } from '../../common/validation/validators';
import { MailboxDto } from '../../sending/dto/send-email.dto';

export class UpdateProjectDto {
  @ApiPropertyOptional({ maxLength: 200 })
  // Absent leaves the name; null is a type error (422), not "no change".
  @ValidateIf((_, value) => value !== undefined)
  @Transform(trimString)
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({
    type: MailboxDto,
    nullable: true,
    description:
      'Sender of mail whose request and template name none ({email, name?}); on a verified domain of the project while REQUIRE_VERIFIED_SENDER holds. null removes it.',
  })
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @IsObject({ message: 'defaultFrom must be {email, name?} or null' })
  @ValidateNested()
  @Type(() => MailboxDto)
  defaultFrom?: MailboxDto | null;
}
