import { ApiProperty } from '@nestjs/swagger';
import type { ContactRow } from '../contact.row';

/** A contact as the API shows it. */
export class ContactResponse {
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

export function toContactResponse(row: ContactRow): ContactResponse {
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
