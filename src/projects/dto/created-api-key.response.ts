import { ApiProperty } from '@nestjs/swagger';
import { ApiKeyResponse } from './api-key.response';

/** A key just created (POST /project/keys, CLI `keys create --json`): the only time it is shown. */
export class CreatedApiKeyResponse {
  @ApiProperty({ type: ApiKeyResponse })
  key: ApiKeyResponse;

  @ApiProperty({
    example: 'sk_3f1cZ…',
    description: 'The key itself. Shown only in this answer: store it now',
  })
  apiKey: string;
}
