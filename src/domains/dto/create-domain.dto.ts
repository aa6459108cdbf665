import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';

export class CreateDomainDto {
  @ApiProperty({
    example: 'mail.example.com',
    description:
      'A hostname you own. IDN accepted (stored as punycode, lower case); no scheme, path or trailing dot.',
    maxLength: 253,
  })
  @IsString()
  @MaxLength(253)
  domain: string;
}
