import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/** GET /project/stats?days=… */
export class ProjectStatsQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 90,
    default: 30,
    description:
      'The window: the last `days` UTC days, today included, compared with the `days` before',
  })
  @IsOptional()
  // Only plain decimal digits become a number, as for limit.
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value,
  )
  @IsInt()
  @Min(1)
  @Max(90)
  days?: number;
}

const RATE = {
  type: Number,
  nullable: true,
  example: 0.012,
  description: 'A share of sent (0..1); null when nothing was sent',
} as const;

/** One window of GET /project/stats. */
export class StatsWindowResponse {
  @ApiProperty({ format: 'date-time', description: 'Midnight UTC starting the first day' })
  from: string;

  @ApiProperty({
    format: 'date-time',
    description: 'Midnight UTC ending the last day (for the current window, the coming midnight)',
  })
  to: string;

  @ApiProperty({
    type: 'integer',
    description: 'Emails that went out (or were refused) in the window, by their outcome time',
  })
  sent: number;

  @ApiProperty({ type: 'integer', description: 'Of those, opened at least once' })
  opened: number;

  @ApiProperty({ type: 'integer', description: 'Of those, clicked at least once' })
  clicked: number;

  @ApiProperty({ type: 'integer', description: 'Of those, BOUNCED' })
  bounced: number;

  @ApiProperty({ type: 'integer', description: 'Of those, COMPLAINED' })
  complained: number;

  @ApiProperty(RATE)
  openRate: number | null;

  @ApiProperty(RATE)
  clickRate: number | null;

  @ApiProperty(RATE)
  bounceRate: number | null;

  @ApiProperty(RATE)
  complaintRate: number | null;
}

export class ProjectStatsResponse {
  @ApiProperty({ type: 'integer' })
  days: number;

  @ApiProperty({ type: StatsWindowResponse, description: 'The last `days` days' })
  current: StatsWindowResponse;

  @ApiProperty({ type: StatsWindowResponse, description: 'The `days` days before those' })
  previous: StatsWindowResponse;
}
