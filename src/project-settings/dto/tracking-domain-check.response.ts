import { ApiProperty } from '@nestjs/swagger';

/** A verified tracking domain, as GET /tracking-domains/check answers it. */
export class TrackingDomainCheckResponse {
  @ApiProperty({ example: 'links.example.com', description: 'The name, in stored form (punycode)' })
  domain: string;
}
