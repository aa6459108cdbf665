import { ApiProperty } from '@nestjs/swagger';

export class EventView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ example: 'signup' })
  name: string;

  @ApiProperty({ format: 'uuid' })
  contactId: string;

  @ApiProperty({ format: 'uuid', nullable: true, type: String })
  emailId: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true })
  data: Record<string, unknown>;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;
}

export interface EventRow {
  id: string;
  projectId: string;
  contactId: string;
  emailId: string | null;
  name: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

export function toEventView(row: EventRow): EventView {
  return {
    id: row.id,
    name: row.name,
    contactId: row.contactId,
    emailId: row.emailId,
    data: row.data,
    createdAt: row.createdAt.toISOString(),
  };
}
