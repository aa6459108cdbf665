import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsString, IsUUID, MaxLength } from 'class-validator';
import { ContactEmailField } from '../../contacts/dto/validators';
import { NotBlank, OptionalNotNull } from '../../common/validation/validators';

export const API_BOUNCE_TYPES = ['hard', 'soft', 'complaint'] as const;

/** POST /bounces: a bounce or complaint the caller learned of itself (source `api`). */
export class CreateBounceDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'The email it is about (or `email`)' })
  @OptionalNotNull()
  @IsUUID('all')
  emailId?: string;

  @ApiPropertyOptional({
    example: 'ada@example.com',
    description: 'The recipient (or `emailId`): the latest email sent to this address is meant',
  })
  @OptionalNotNull()
  @ContactEmailField()
  email?: string;

  @ApiProperty({ enum: API_BOUNCE_TYPES })
  @IsIn(API_BOUNCE_TYPES)
  type: (typeof API_BOUNCE_TYPES)[number];

  @ApiPropertyOptional({ example: '5.1.1', description: 'Enhanced status or SMTP reply code' })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(32)
  status?: string;

  @ApiPropertyOptional({ example: '550 5.1.1 user unknown' })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(1000)
  diagnostic?: string;
}
