import { ApiProperty } from '@nestjs/swagger';

/** A sender `{email, name|null}`: a project's default sender. */
export class SenderResponse {
  @ApiProperty({ format: 'email' })
  email: string;

  @ApiProperty({ type: String, nullable: true })
  name: string | null;
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

  @ApiProperty({ format: 'date-time' })
  createdAt: string;
}
