import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/** GET /events/per-minute?minutes=… */
export class EventsPerMinuteQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 120,
    default: 60,
    description: 'How many minutes back, the current minute included',
  })
  @IsOptional()
  // Only plain decimal digits become a number, as for limit.
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value,
  )
  @IsInt()
  @Min(1)
  @Max(120)
  minutes?: number;
}

export class MinuteCountResponse {
  @ApiProperty({ format: 'date-time', description: 'The start of the minute (UTC)' })
  minute: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  count: number;
}

/** One point per minute, oldest first, minutes without events as 0. */
export class EventsPerMinuteResponse {
  @ApiProperty({ type: 'integer' })
  minutes: number;

  @ApiProperty({ type: [MinuteCountResponse] })
  points: MinuteCountResponse[];
}
