import { ApiProperty } from '@nestjs/swagger';
import type { EventRow } from '../event.row';

export class EventResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ example: 'signup' })
  name: string;

  @ApiProperty({
    format: 'uuid',
    nullable: true,
    type: String,
    description: 'null for project events (campaign.*)',
  })
  contactId: string | null;

  @ApiProperty({ format: 'uuid', nullable: true, type: String })
  emailId: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true })
  data: Record<string, unknown>;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;
}

export function toEventResponse(row: EventRow): EventResponse {
  return {
    id: row.id,
    name: row.name,
    contactId: row.contactId,
    emailId: row.emailId,
    data: row.data,
    createdAt: row.createdAt.toISOString(),
  };
}
