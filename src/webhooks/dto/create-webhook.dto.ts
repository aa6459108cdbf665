import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  MaxLength,
} from 'class-validator';
import { OptionalNotNull } from '../../common/validation/validators';
import { EVENT_PATTERN } from '../webhook-events';

export class CreateWebhookDto {
  @ApiProperty({
    format: 'uri',
    maxLength: 2048,
    example: 'https://app.example.com/hooks/mailwright',
  })
  @IsString()
  @MaxLength(2048)
  @IsUrl({
    protocols: ['http', 'https'],
    require_protocol: true,
    require_tld: false,
    allow_underscores: true,
  })
  url: string;

  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: 50,
    example: ['email.*', 'contact.unsubscribed', 'campaign.sent'],
    description: 'Event names or prefixes ending in `*` (`email.*`, `*`)',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @ArrayUnique()
  @IsString({ each: true })
  @MaxLength(100, { each: true })
  @Matches(EVENT_PATTERN, {
    each: true,
    message: 'each value in events must be an event name, a prefix ending in ".*", or "*"',
  })
  events: string[];

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000 })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  description?: string | null;

  @ApiPropertyOptional({ description: 'true when absent' })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;
}
