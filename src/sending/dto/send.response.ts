import { ApiProperty } from '@nestjs/swagger';

/** One recipient's email record as POST /v1/send answers it. */
export class SentEmailResponse {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'email' }) to: string;
  @ApiProperty({ format: 'uuid', description: 'contact id' }) contact: string;
  @ApiProperty({ type: String, enum: ['QUEUED', 'SUPPRESSED'] }) status: string;
}

/** The answer of POST /v1/send (an Idempotency-Key replay answers it byte for byte). */
export class SendResponse {
  @ApiProperty({ format: 'uuid', description: 'contact id of the first recipient' })
  contact: string;
  @ApiProperty({ format: 'uuid', description: 'email.queued event id of the first recipient' })
  event: string;
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: [SentEmailResponse] }) emails: SentEmailResponse[];
}
