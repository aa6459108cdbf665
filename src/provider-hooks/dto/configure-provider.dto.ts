import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { PROVIDERS, type Provider } from '../provider-hook.entity';

/** Path `{provider}` of the provider webhook routes: anything else is a 400 naming it. */
export class ProviderParamDto {
  @ApiProperty({ enum: PROVIDERS, description: 'The relay provider' })
  @IsIn(PROVIDERS)
  provider: Provider;
}

/**
 * The provider's credentials, per provider: ses none (SNS messages carry a
 * certificate-verified signature), postmark `username` + `password` (HTTP
 * basic auth on the URL), mailgun `secret` (the HTTP webhook signing key),
 * sendgrid `publicKey` (the signed event webhook's verification key, base64),
 * resend `secret` (`whsec_…`). A field another provider uses is 422.
 */
export class ConfigureProviderDto {
  @ApiPropertyOptional({
    maxLength: 500,
    description: 'mailgun: the HTTP webhook signing key; resend: the signing secret (`whsec_…`)',
  })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  secret?: string;

  @ApiPropertyOptional({
    maxLength: 4096,
    description: 'sendgrid: the verification key of the signed event webhook (base64 DER, or PEM)',
  })
  @IsOptional()
  @IsString()
  @MaxLength(4096)
  publicKey?: string;

  @ApiPropertyOptional({
    maxLength: 200,
    description: 'postmark: the basic-auth username set on the webhook URL',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  username?: string;

  @ApiPropertyOptional({
    maxLength: 200,
    description: 'postmark: the basic-auth password set on the webhook URL',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  password?: string;
}
