import { ApiProperty } from '@nestjs/swagger';

/** A contact as the API shows it. */
export class ContactView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ example: 'ada@example.com' })
  email: string;

  @ApiProperty()
  subscribed: boolean;

  @ApiProperty({
    description: 'true after a hard bounce or complaint: the contact is never sent to',
  })
  suppressed: boolean;

  @ApiProperty({ type: 'object', additionalProperties: true })
  data: Record<string, unknown>;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt: string;
}

/** The row shape returned by the contacts queries (raw SQL or entity). */
export interface ContactRow {
  id: string;
  projectId: string;
  email: string;
  subscribed: boolean;
  suppressed: boolean;
  data: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export function toContactView(row: ContactRow): ContactView {
  return {
    id: row.id,
    email: row.email,
    subscribed: row.subscribed,
    suppressed: row.suppressed,
    data: row.data,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
