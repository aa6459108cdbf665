import { ApiProperty } from '@nestjs/swagger';
import { DnsRecordPurpose, DnsRecordStatus, DomainStatus } from '../domain.entity';

export class DomainRecordResponse {
  @ApiProperty({ enum: ['TXT'] })
  type: 'TXT';

  @ApiProperty({
    example: '_mailwright.example.com',
    description: 'Fully qualified name of the record',
  })
  name: string;

  @ApiProperty({ example: 'mailwright-verification=3f1c…', description: 'The value to publish' })
  value: string;

  @ApiProperty({ enum: DnsRecordPurpose })
  purpose: DnsRecordPurpose;

  @ApiProperty({
    description: 'Required for the domain to become VERIFIED; SPF and DMARC are recommended only',
  })
  required: boolean;

  @ApiProperty({ enum: DnsRecordStatus })
  status: DnsRecordStatus;
}

export class DomainResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ example: 'example.com', description: 'Punycode, lower case' })
  domain: string;

  @ApiProperty({ enum: DomainStatus })
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
