import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { bearerToken, tokenMatches } from '../common/metrics/metrics';
import { RateLimitService } from '../common/rate-limit/rate-limit.service';
import { AppConfig, runsApi, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { MetricsService } from './metrics.service';

/**
 * GET /metrics of a worker-only process (APP_ROLE=worker), which serves no
 * API: deliveries, SMTP errors and workflow steps are counted where they
 * happen, in the workers, so Prometheus scrapes every API and every worker
 * process. On WORKER_METRICS_PORT (and HOST) when set; the same text and the
 * same METRICS_TOKEN rule as the API's /metrics. A plain node:http server:
 * the worker's Nest application listens on nothing else.
 */
@Injectable()
export class WorkerMetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WorkerMetricsServer.name);
  private server: Server | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly rateLimits: RateLimitService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.workerMetricsPort;
    if (port === null || runsApi(this.config) || !runsWorkers(this.config)) return;
    const server = createServer((req, res) => void this.answer(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.config.host, () => resolve());
    });
    this.server = server;
    this.logger.log(
      { port, host: this.config.host },
      `worker metrics on http://${this.config.host}:${port}/metrics`,
    );
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (this.config.metricsToken) {
      const ip = req.socket.remoteAddress ?? '';
      const over = await this.rateLimits.tokenGuessesOver(ip);
      if (over) {
        res
          .writeHead(429, {
            'content-type': 'text/plain',
            'retry-after': String(over.resetSeconds),
          })
          .end('too many wrong tokens\n');
        return;
      }
      if (!tokenMatches(bearerToken(req.headers.authorization), this.config.metricsToken)) {
        await this.rateLimits.recordTokenGuess(ip);
        res
          .writeHead(401, { 'content-type': 'text/plain' })
          .end('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>\n');
        return;
      }
    }
    try {
      const { contentType, body } = await this.metrics.render();
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body);
    } catch (error) {
      this.logger.warn({ err: error }, 'worker metrics could not be rendered');
      res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
    }
  }
}
