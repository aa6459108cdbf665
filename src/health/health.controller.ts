import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { NoApiKey } from '../common/auth/auth.decorators';
import { RawResponse } from '../common/http/envelope';
import { ApiErrorResponses, ApiNoKey, ApiOp } from '../common/openapi/decorators';
import { REDIS } from '../queue/redis.module';
import { LiveResponse, ReadyResponse } from './health.response';

type Check = 'up' | 'down';

@ApiTags('health')
@NoApiKey()
@ApiNoKey()
@ApiProduces('application/json')
@ApiErrorResponses([500])
@RawResponse()
@Controller('health')
export class HealthController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  @Get('live')
  @HttpCode(200)
  @ApiOp('health_live', 'Liveness: the process is up (no key; not enveloped)')
  @ApiResponse({ status: 200, description: 'Up', type: LiveResponse })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** 200 when Postgres and Redis both answer within a second, 503 otherwise. */
  @Get('ready')
  @ApiOp(
    'health_ready',
    'Readiness: Postgres and Redis answer within a second (no key; not enveloped)',
  )
  @ApiResponse({ status: 200, description: 'Ready', type: ReadyResponse })
  @ApiResponse({
    status: 503,
    description: 'Postgres or Redis does not answer',
    type: ReadyResponse,
  })
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    const [postgres, redis] = await Promise.all([
      this.probe(() => this.dataSource.query('SELECT 1')),
      this.probe(() => this.redis.ping()),
    ]);
    const ok = postgres === 'up' && redis === 'up';
    reply.status(ok ? 200 : 503);
    return { status: ok ? 'ok' : 'unavailable', checks: { postgres, redis } };
  }

  private async probe(check: () => Promise<unknown>): Promise<Check> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        check(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), 1000);
        }),
      ]);
      return 'up';
    } catch {
      return 'down';
    } finally {
      clearTimeout(timer);
    }
  }
}
