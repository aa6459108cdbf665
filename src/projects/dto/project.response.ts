import { ApiProperty } from '@nestjs/swagger';

/** A sender `{email, name|null}`: a project's default sender. */
export class SenderResponse {
  @ApiProperty({ format: 'email' })
  email: string;

  @ApiProperty({ type: String, nullable: true })
  name: string | null;
}

/** A project's double opt-in setting (PATCH /project {doubleOptIn}). */
export class DoubleOptInResponse {
  @ApiProperty({
    description:
      'POST /v1/subscribe sends a confirmation email and subscribes the contact only once its link is followed',
  })
  enabled: boolean;

  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    description:
      'The confirmation template (its render context adds confirmUrl); null: a built-in email from defaultFrom',
  })
  templateId: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'GET /confirm/{token} answers 302 to this URL instead of its own page',
  })
  confirmRedirectUrl: string | null;
}

/** What PATCH /project {doubleOptIn} changes: `enabled` always, the others when given (null clears). */
export interface DoubleOptInChange {
  enabled: boolean;
  templateId?: string | null;
  confirmRedirectUrl?: string | null;
}

/** A project: GET/PATCH /project, and the CLI's listings. */
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

  @ApiProperty({ type: DoubleOptInResponse })
  doubleOptIn: DoubleOptInResponse;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;
}
