import { ApiProperty } from '@nestjs/swagger';

/** A sender `{email, name|null}` (Sender as the API shows it). */
export class SenderResponse {
  @ApiProperty({ format: 'email' })
  email: string;

  @ApiProperty({ type: String, nullable: true })
  name: string | null;
}

/** The calling key's project (ProjectView as a documented class). */
export class ProjectResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ description: 'A disabled project answers 403 PROJECT_DISABLED to every key' })
  enabled: boolean;

  @ApiProperty({
    type: SenderResponse,
    nullable: true,
    description: 'Sender of mail whose request and template name none',
  })
  defaultFrom: SenderResponse | null;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;
}

/** An API key without its secret (ApiKeyView as a documented class). */
export class ApiKeyResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'uuid' })
  projectId: string;

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
