import { ApiProperty } from '@nestjs/swagger';
import type { EventNameRow } from '../events.repository';

/** One item of GET /events/names. */
export class EventNameResponse {
  @ApiProperty()
  name: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Events of this name the project currently holds',
  })
  count: number;

  @ApiProperty({ format: 'date-time' })
  lastSeenAt: string;
}

export function toEventNameResponse(row: EventNameRow): EventNameResponse {
  return { name: row.name, count: Number(row.count), lastSeenAt: row.lastSeenAt.toISOString() };
}
