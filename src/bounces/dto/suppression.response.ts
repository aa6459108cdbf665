import { ApiProperty } from '@nestjs/swagger';
import { SuppressionReason } from '../../contacts/contact.entity';
import type { SuppressedContact } from '../../contacts/contacts.repository';

/** A suppressed contact: never sent to until the suppression is lifted. */
export class SuppressionResponse {
  @ApiProperty({ format: 'uuid' }) contactId: string;
  @ApiProperty({ example: 'ada@example.com' }) email: string;
  @ApiProperty({ enum: SuppressionReason, enumName: 'SuppressionReason' })
  reason: SuppressionReason;
  @ApiProperty({ format: 'date-time' }) suppressedAt: string;
  @ApiProperty() subscribed: boolean;
}

export function toSuppressionResponse(row: SuppressedContact): SuppressionResponse {
  return {
    contactId: row.id,
    email: row.email,
    // Rows suppressed before reasons were kept read as bounces (the only cause then).
    reason: row.reason ?? SuppressionReason.BOUNCE,
    suppressedAt: (row.suppressedAt ?? new Date(0)).toISOString(),
    subscribed: row.subscribed,
  };
}
