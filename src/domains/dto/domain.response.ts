import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DnsRecordError, DnsRecordPurpose, DnsRecordStatus, DomainStatus } from '../domain.entity';

export class DomainRecordResponse {
  @ApiProperty({ enum: ['TXT', 'CNAME'] })
  type: 'TXT' | 'CNAME';

  @ApiProperty({
    example: '_mailwright.example.com',
    description: 'Fully qualified name of the record',
  })
  name: string;

  @ApiProperty({ example: 'mailwright-verification=3f1c…', description: 'The value to publish' })
  value: string;

  @ApiProperty({ enum: DnsRecordPurpose, enumName: 'DnsRecordPurpose' })
  purpose: DnsRecordPurpose;

  @ApiProperty({
    description: 'Required for the domain to become VERIFIED; SPF and DMARC are recommended only',
  })
  required: boolean;

  @ApiProperty({ enum: DnsRecordStatus, enumName: 'DnsRecordStatus' })
  status: DnsRecordStatus;

  @ApiPropertyOptional({
    type: [String],
    description:
      'Not verified: the values the last check found at the name (TXT values, or the CNAME target; at most 5), when there were any',
  })
  found?: string[];

  @ApiPropertyOptional({
    enum: DnsRecordError,
    enumName: 'DnsRecordError',
    description:
      'Not verified: why. NXDOMAIN (the name does not exist), NO_RECORD (no such TXT or CNAME record at the name), MISMATCH (another value is published), DNS_ERROR (no answer from DNS; the status is kept)',
  })
  error?: DnsRecordError;
}

export class DomainResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ example: 'example.com', description: 'Punycode, lower case' })
  domain: string;

  @ApiProperty({ enum: DomainStatus, enumName: 'DomainStatus' })
  status: DomainStatus;

  @ApiProperty({ type: [DomainRecordResponse] })
  records: DomainRecordResponse[];

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  lastCheckedAt: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  verifiedAt: string | null;

  @ApiProperty({ type: String, format: 'date-time' })
  createdAt: string;
}
