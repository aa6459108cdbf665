import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';

/** GET /tracking-domains/check?domain=: the name a TLS proxy is asked a certificate for. */
export class TrackingDomainCheckQueryDto {
  @ApiProperty({ example: 'links.example.com', maxLength: 253 })
  @IsString()
  @MaxLength(253)
  domain: string;
}
