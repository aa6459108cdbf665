import { ApiProperty } from '@nestjs/swagger';

export class SessionProjectResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  name: string;
}

/** The signed-in dashboard session: POST /session and GET /session. */
export class SessionResponse {
  @ApiProperty({ type: SessionProjectResponse })
  project: SessionProjectResponse;

  @ApiProperty({
    description:
      'Send as the X-CSRF-Token header on every POST, PUT, PATCH and DELETE made with the session cookie',
  })
  csrfToken: string;

  @ApiProperty({
    format: 'date-time',
    description:
      'When the session ends if it is not used (idle expiry: 12 hours, slid by each request)',
  })
  expiresAt: string;
}

export class SessionEndedResponse {
  @ApiProperty({
    description: 'Always true: the session is ended on the server and its cookie removed',
  })
  signedOut: boolean;
}
