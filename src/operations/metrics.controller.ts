import { Controller, Get, Headers, Inject, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NoApiKey } from '../common/auth/auth.decorators';
import { ApiException } from '../common/errors/api-exception';
import { RawResponse } from '../common/http/envelope';
import { bearerToken, tokenMatches } from '../common/metrics/metrics';
import { RateLimitService } from '../common/rate-limit/rate-limit.service';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { MetricsService } from './metrics.service';

/**
 * GET /metrics in the Prometheus text format: no API key; `METRICS_TOKEN`,
 * when set, is required as a bearer token (compared in constant time). Not
 * in the OpenAPI document: it is for Prometheus, not API clients.
 */
@ApiExcludeController()
@NoApiKey()
@RawResponse()
@Controller('metrics')
export class MetricsController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly rateLimits: RateLimitService,
  ) {}

  @Get()
  async scrape(
    @Headers('authorization') authorization: string | undefined,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (this.config.metricsToken) {
      const over = await this.rateLimits.tokenGuessesOver(request.ip);
      if (over) {
        void reply.header('Retry-After', String(over.resetSeconds));
        throw new ApiException(
          429,
          'RATE_LIMIT_EXCEEDED',
          'Too many wrong tokens from this address',
        );
      }
      const presented = bearerToken(authorization);
      if (!tokenMatches(presented, this.config.metricsToken)) {
        await this.rateLimits.recordTokenGuess(request.ip);
        throw new ApiException(
          401,
          presented ? 'INVALID_API_KEY' : 'MISSING_API_KEY',
          'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>',
          {
            suggestion: 'Configure the scraper with the METRICS_TOKEN as a bearer token.',
          },
        );
      }
    }
    const { contentType, body } = await this.metrics.render();
    void reply
      .code(200)
      .header('content-type', contentType)
      .header('cache-control', 'no-store')
      .send(body);
  }
}
