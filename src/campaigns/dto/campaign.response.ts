import { ApiProperty } from '@nestjs/swagger';
import { AudienceType, Campaign, CampaignStatus } from '../campaign.entity';

export class CampaignResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty() subject: string;
  @ApiProperty() body: string;
  @ApiProperty({ format: 'email' }) from: string;
  @ApiProperty({ type: String, nullable: true }) fromName: string | null;
  @ApiProperty({ type: String, nullable: true }) replyTo: string | null;
  @ApiProperty({ enum: AudienceType, enumName: 'AudienceType' }) audienceType: AudienceType;
  @ApiProperty({
    enum: AudienceType,
    enumName: 'AudienceType',
    description: 'The same value as audienceType (the spec sample calls it type)',
  })
  type: AudienceType;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) segmentId: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true })
  audienceFilter: Record<string, unknown> | null;
  @ApiProperty() trackOpens: boolean;
  @ApiProperty() trackClicks: boolean;
  @ApiProperty({ enum: CampaignStatus, enumName: 'CampaignStatus' }) status: CampaignStatus;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) scheduledAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) startedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) cancelledAt: string | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: 0,
    description: 'The audience fixed when sending started; null before',
  })
  recipientCount: number | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class CampaignStatsResponse {
  @ApiProperty({
    enum: CampaignStatus,
    enumName: 'CampaignStatus',
    description: 'The campaign’s status, so one URL can be polled until SENT',
  })
  status: CampaignStatus;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'recipientCount (0 before sending starts)',
  })
  recipients: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) queued: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) sending: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'Accepted by the receiving server, including those that bounced or complained later',
  })
  sent: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) failed: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Hard bounces: refused during delivery or reported later (DSN, provider, API)',
  })
  bounced: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Spam complaints (COMPLAINED)' })
  complained: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) suppressed: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) cancelled: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Emails opened at least once (unique opens)',
  })
  opened: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Emails with at least one tracked click',
  })
  clicked: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Recipients who unsubscribed through this campaign’s mail',
  })
  unsubscribed: number;
  @ApiProperty({ minimum: 0, maximum: 1, description: 'opened / sent (0 when nothing is sent)' })
  openRate: number;
  @ApiProperty({ minimum: 0, maximum: 1, description: 'complained / sent' })
  complaintRate: number;
  @ApiProperty({ minimum: 0, maximum: 1 }) clickRate: number;
  @ApiProperty({ minimum: 0, maximum: 1 }) bounceRate: number;
  @ApiProperty({ minimum: 0, maximum: 1 }) unsubscribeRate: number;
}

export function toCampaignResponse(row: Campaign): CampaignResponse {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    subject: row.subject,
    body: row.body,
    from: row.fromEmail,
    fromName: row.fromName,
    replyTo: row.replyTo,
    audienceType: row.audienceType,
    type: row.audienceType,
    segmentId: row.segmentId,
    audienceFilter: row.audienceFilter,
    trackOpens: row.trackOpens,
    trackClicks: row.trackClicks,
    status: row.status,
    scheduledAt: iso(row.scheduledAt),
    startedAt: iso(row.startedAt),
    finishedAt: iso(row.finishedAt),
    cancelledAt: iso(row.cancelledAt),
    recipientCount: row.recipientCount,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
