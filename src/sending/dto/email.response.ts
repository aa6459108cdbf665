import { ApiProperty } from '@nestjs/swagger';
import { EmailSource, EmailStatus } from '../email.entity';

export class EmailBounceResponse {
  @ApiProperty({ enum: ['hard', 'soft'] }) type: 'hard' | 'soft';
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'Enhanced status code (5.1.1) or SMTP reply code',
  })
  status: string | null;
  @ApiProperty({ nullable: true, type: String }) diagnostic: string | null;
  @ApiProperty({
    enum: ['smtp', 'dsn', 'arf', 'ses', 'postmark', 'mailgun', 'sendgrid', 'resend', 'api'],
  })
  source: string;
}

/** An email record (GET /emails, GET /emails/{id}); without its rendered content. */
export class EmailResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'email' }) to: string;
  @ApiProperty({ format: 'email' }) from: string;
  @ApiProperty() subject: string;
  @ApiProperty({ enum: EmailStatus, enumName: 'EmailStatus' }) status: EmailStatus;
  @ApiProperty({ enum: EmailSource, enumName: 'EmailSource' }) source: EmailSource;
  @ApiProperty({ format: 'uuid' }) contactId: string;
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) templateId: string | null;
  @ApiProperty({ format: 'uuid', nullable: true, type: String }) campaignId: string | null;
  @ApiProperty({ nullable: true, type: String }) messageId: string | null;
  @ApiProperty({ type: 'integer', minimum: 0 }) attempts: number;
  @ApiProperty({ nullable: true, type: String }) error: string | null;
  @ApiProperty({
    nullable: true,
    type: Boolean,
    description:
      'Whether the sent message carries a DKIM signature: false for mail from a domain that is not verified (allowed when REQUIRE_VERIFIED_SENDER is off, the outbox default); null until sent',
  })
  dkimSigned: boolean | null;
  @ApiProperty({ description: 'Whether the delivered HTML carries the open pixel' })
  trackOpens: boolean;
  @ApiProperty({
    description: 'Whether the links of the delivered HTML are rewritten to tracked redirects',
  })
  trackClicks: boolean;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Open pixel hits (openedAt is the first)',
  })
  opens: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Tracked link hits (clickedAt is the first)',
  })
  clicks: number;
  @ApiProperty({ format: 'date-time' }) queuedAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) sentAt: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) openedAt: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) clickedAt: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) bouncedAt: string | null;
  @ApiProperty({
    type: EmailBounceResponse,
    nullable: true,
    description: 'The hard bounce, or the last soft one while there is no hard one; null when none',
  })
  bounce: EmailBounceResponse | null;
  @ApiProperty({ format: 'date-time', nullable: true, type: String }) complainedAt: string | null;
}
