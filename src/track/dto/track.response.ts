import { ApiProperty } from '@nestjs/swagger';

/** What POST /v1/track answers. */
export class TrackResponse {
  @ApiProperty({ format: 'uuid', description: 'contact id' })
  contact: string;

  @ApiProperty({ format: 'uuid', description: 'event id' })
  event: string;

  @ApiProperty({ format: 'date-time' })
  timestamp: string;
}
