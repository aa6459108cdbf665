import { ApiProperty } from '@nestjs/swagger';

/** An API key without its secret: GET /project/keys, and the CLI's listings. */
export class ApiKeyResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'uuid' })
  projectId: string;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The name given at creation (POST /project/keys), or null',
  })
  name: string | null;

  @ApiProperty({ type: String, enum: ['secret', 'public'] })
  type: 'secret' | 'public';

  @ApiProperty({
    example: 'sk_3f1c',
    description: 'The first characters of the key, to recognise it',
  })
  prefix: string;

  @ApiProperty()
  revoked: boolean;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  revokedAt: string | null;
}
