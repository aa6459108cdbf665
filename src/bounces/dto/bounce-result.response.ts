import { ApiProperty } from '@nestjs/swagger';

/** What POST /bounces did with the report. */
export class BounceResultResponse {
  @ApiProperty({
    enum: ['applied', 'duplicate', 'unmatched', 'ignored'],
    description:
      'applied: effects written; unmatched: no email of this project matched (kept); ignored: the email was past this (a status never goes backwards)',
  })
  outcome: 'applied' | 'duplicate' | 'unmatched' | 'ignored';

  @ApiProperty({ format: 'uuid', nullable: true, type: String })
  emailId: string | null;
}
