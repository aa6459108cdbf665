import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { TrackingDomainStatus } from '../project.entity';

/** A sender `{email, name|null}`: a project's default sender. */
export class SenderResponse {
  @ApiProperty({ format: 'email' })
  email: string;

  @ApiProperty({ type: String, nullable: true })
  name: string | null;
}

/** The CNAME that makes a tracking domain point at the service. */
export class TrackingDomainRecordResponse {
  @ApiProperty({ enum: ['CNAME'] })
  type: 'CNAME';

  @ApiProperty({
    example: 'links.example.com',
    description: 'The name of the record: the tracking domain',
  })
  name: string;

  @ApiProperty({
    example: 'mail.example.net',
    description: 'Its target: TRACKING_CNAME_TARGET, or the host of PUBLIC_URL',
  })
  value: string;

  @ApiProperty({ enum: ['PENDING', 'VERIFIED', 'FAILED'] })
  status: TrackingDomainStatus;

  @ApiPropertyOptional({
    type: [String],
    description: 'Not verified: the CNAME target the last check found, when there was one',
  })
  found?: string[];

  @ApiPropertyOptional({
    enum: ['NXDOMAIN', 'NO_RECORD', 'MISMATCH', 'DNS_ERROR', 'TAKEN', 'NOT_OWNED'],
    description:
      'Not verified: why. NXDOMAIN (the name does not exist), NO_RECORD (no CNAME at the name), MISMATCH (a CNAME to another host), DNS_ERROR (no answer from DNS; the status is kept), TAKEN (another project has this tracking domain verified), NOT_OWNED (the CNAME is right but the name is neither a VERIFIED sending domain of this project nor under one)',
  })
  error?: string;
}

/** A project's tracking domain (contract "Tracking domain"). */
export class TrackingDomainResponse {
  @ApiProperty({ example: 'links.example.com' })
  domain: string;

  @ApiProperty({
    enum: ['PENDING', 'VERIFIED', 'FAILED'],
    description:
      "VERIFIED: the pixel, click and unsubscribe links of the project's new mail use it. PENDING until its CNAME is found (checked by POST /project/tracking-domain/verify and the domain sweep); FAILED when it was not found within the pending window, or a verified CNAME is gone",
  })
  status: TrackingDomainStatus;

  @ApiProperty({ type: TrackingDomainRecordResponse })
  record: TrackingDomainRecordResponse;
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

  @ApiProperty({
    type: TrackingDomainResponse,
    nullable: true,
    description: "The host of the links in the project's mail once verified; null: PUBLIC_URL's",
  })
  trackingDomain: TrackingDomainResponse | null;
  @ApiProperty({ type: DoubleOptInResponse })
  doubleOptIn: DoubleOptInResponse;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;
}
