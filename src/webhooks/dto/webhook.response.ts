import { ApiProperty } from '@nestjs/swagger';
import { WebhookDelivery, WebhookDeliveryStatus } from '../webhook-delivery.entity';
import { WebhookEndpoint } from '../webhook-endpoint.entity';
import { maskCredentials } from '../url-credentials';

export class WebhookResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({
    format: 'uri',
    description:
      'Credentials in it (`user:pass@`) are shown as `***@`; sending that back keeps them',
  })
  url: string;
  @ApiProperty({ type: [String] }) events: string[];
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty() enabled: boolean;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why the system disabled it (failing for 3 days)',
  })
  disabledReason: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'Since when every attempt failed',
  })
  failingSince: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

/** Create and rotate-secret answers: the only time the secret is shown. */
export class WebhookWithSecretResponse extends WebhookResponse {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret (Standard Webhooks); shown once',
  })
  secret: string;
}

export class WebhookDeliveryResponse {
  @ApiProperty({ format: 'uuid', description: 'Also the webhook-id header of every attempt' })
  id: string;
  @ApiProperty({ example: 'email.sent' }) eventType: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) eventId: string | null;
  @ApiProperty({ enum: WebhookDeliveryStatus, enumName: 'WebhookDeliveryStatus' })
  status: WebhookDeliveryStatus;
  @ApiProperty({ type: 'integer', minimum: 0 }) attempts: number;
  @ApiProperty({ type: 'integer', nullable: true }) responseStatus: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The first 1 KB of the last response body, or the network error',
  })
  lastError: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) lastAttemptAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) nextAttemptAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toWebhookResponse(row: WebhookEndpoint): WebhookResponse {
  return {
    id: row.id,
    url: maskCredentials(row.url),
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    failingSince: iso(row.failingSince),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function toDeliveryResponse(row: WebhookDelivery): WebhookDeliveryResponse {
  return {
    id: row.id,
    eventType: row.eventType,
    eventId: row.eventId,
    status: row.status,
    attempts: row.attempts,
    responseStatus: row.responseStatus,
    lastError: row.lastError,
    lastAttemptAt: iso(row.lastAttemptAt),
    nextAttemptAt: row.status === WebhookDeliveryStatus.PENDING ? iso(row.nextAttemptAt) : null,
    createdAt: row.createdAt.toISOString(),
  };
}
