import { ApiProperty } from '@nestjs/swagger';

/** GET /health/live (not enveloped: probes read it as is). */
export class LiveResponse {
  @ApiProperty({ type: String, enum: ['ok'] })
  status: 'ok';
}

export class ReadyChecksResponse {
  @ApiProperty({ type: String, enum: ['up', 'down'] })
  postgres: 'up' | 'down';

  @ApiProperty({ type: String, enum: ['up', 'down'] })
  redis: 'up' | 'down';
}

/** GET /health/ready: 200 when Postgres and Redis answer, 503 otherwise (same shape). */
export class ReadyResponse {
  @ApiProperty({ type: String, enum: ['ok', 'unavailable'] })
  status: 'ok' | 'unavailable';

  @ApiProperty({ type: ReadyChecksResponse })
  checks: ReadyChecksResponse;
}
