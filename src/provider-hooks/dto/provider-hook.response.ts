import { ApiProperty } from '@nestjs/swagger';
import { PROVIDERS, type Provider } from '../provider-hook.entity';

/** What to paste into the provider's console; the credentials are never answered. */
export class ProviderHookResponse {
  @ApiProperty({ enum: PROVIDERS })
  provider: Provider;

  @ApiProperty({
    format: 'uri',
    example: 'https://mail.example.com/inbound/postmark/3q2-7wQ9v1Xb0aLk4Yc8sTn5uEfGhJiK',
    description: 'The webhook URL for the provider: `${PUBLIC_URL}/inbound/{provider}/{inboundId}`',
  })
  url: string;
}
