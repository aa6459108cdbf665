import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsString, MaxLength } from 'class-validator';
import { NoLineBreaks, NotBlank, OptionalNotNull } from '../../common/validation/validators';

/** POST /project/keys. `type` as in the key listing and the CLI's `keys create --type`. */
export class CreateApiKeyDto {
  @ApiProperty({
    type: String,
    enum: ['secret', 'public'],
    description:
      '`secret` (sk_: every endpoint) or `public` (pk_: POST /v1/track and /v1/subscribe)',
  })
  @IsIn(['secret', 'public'])
  type: 'secret' | 'public';

  @ApiPropertyOptional({
    maxLength: 100,
    example: 'Production server',
    description: 'A label shown in the key listing',
  })
  @OptionalNotNull()
  @IsString()
  @NotBlank()
  @MaxLength(100)
  @NoLineBreaks()
  name?: string;
}
