import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { resolve } from 'node:path';
import { FastifyReply, FastifyRequest, LogController } from 'fastify';
import type { Logger } from 'pino';
import { SwaggerModule } from '@nestjs/swagger';
import { AppMetrics } from './common/metrics/metrics';
import { mountQueueDashboard } from './operations/queue-dashboard';
import { AppModule, RAW_ROUTE_OPENAPI_PATHS } from './app.module';
import { DEFAULT_BODY_LIMIT, FORM_BODY_ROUTES, ROUTE_BODY_LIMITS } from './common/http/body-limits';
import { registerApiRequestScope } from './common/http/api-request-scope';
import { registerCors } from './common/http/cors';
import { registerSecurityHeaders } from './common/http/security-headers';
import { registerSuccessEnvelope } from './common/http/envelope';
import { mountWebApp } from './common/http/web-app';
import {
  clientErrorHandler,
  frameworkErrors,
  MAX_PARAM_LENGTH,
} from './common/http/framework-errors';
import { generateRequestId } from './common/http/request-id';
import { buildOpenApiDocument } from './common/openapi/document';
import {
  createRootLogger,
  loggableUrl,
  PinoNestLogger,
  REQUEST_ID_LOG_LABEL,
  requestChildLogger,
} from './common/logging/logger';
import { AppConfig, runsApi, runsWorkers } from './config/config';
import { QueueWorkersService } from './queue/queue-workers.service';
import { registerRecentRefusals } from './common/rate-limit/recent-refusals';

/** The request's logger is pino's child (isLevelEnabled), which FastifyBaseLogger does not declare. */
function infoEnabled(request: FastifyRequest): boolean {
  const log = request.log as unknown as { isLevelEnabled?: (level: string) => boolean };
  return log.isLevelEnabled ? log.isLevelEnabled('info') : true;
}

/** One JSON line per request, with its request id, at the end of the request (not at the start too). */
class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: REQUEST_ID_LOG_LABEL });
  }

  override incomingRequest(): void {
    // The completion line says everything; one line per request halves logging cost.
  }

  override requestCompleted(
    error: Error | null,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const failed = Boolean(error) || reply.statusCode >= 500; // error is undefined, not null, when none
    // Below LOG_LEVEL=info nothing but failures is written: no line to build (the URL's redaction showed in profiles).
    if (!failed && !infoEnabled(request)) return;
    const line = {
      method: request.method,
      url: loggableUrl(request.url),
      statusCode: reply.statusCode,
      responseTime: Math.round(reply.elapsedTime),
    };
    if (failed) request.log.error({ ...line, err: error ?? undefined }, 'request completed');
    else request.log.info(line, 'request completed');
  }
}

function createAdapter(config: AppConfig, logger: Logger, metrics: AppMetrics): FastifyAdapter {
  const adapter = new FastifyAdapter({
    bodyLimit: DEFAULT_BODY_LIMIT,
    genReqId: generateRequestId,
    trustProxy: config.trustProxy,
    loggerInstance: logger,
    logController: new RequestLogController(),
    childLoggerFactory: requestChildLogger,
    return503OnClosing: true,
    // Refusals before routing use the error envelope too (src/common/http/framework-errors.ts).
    frameworkErrors,
    clientErrorHandler,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // No Nest middleware is used: @fastify/middie would only cost every request a pass.
    skipMiddie: true,
    // A client that trickles its headers or body holds a connection at most this long (408).
    requestTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, config.requestTimeoutMs),
    },
  });
  const fastify = adapter.getInstance();
  fastify.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      const limit = ROUTE_BODY_LIMITS[`${method} ${route.url}`];
      if (limit) route.bodyLimit = limit;
    }
  });
  registerApiRequestScope(fastify);
  registerSecurityHeaders(fastify, config.publicUrl.startsWith('https:'));
  if (runsApi(config)) registerCors(fastify, config.corsOrigins);
  registerSuccessEnvelope(fastify);
  metrics.instrument(fastify);
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  if (runsApi(config))
    registerRecentRefusals(fastify, (method, route, seconds) =>
      metrics.observeEarlyRefusal(method, route, seconds),
    );
  fastify.addHook('preValidation', (request, _reply, done) => {
    const type = request.headers['content-type'] ?? '';
    if (
      /^\s*application\/x-www-form-urlencoded/i.test(type) &&
      !FORM_BODY_ROUTES.has(`${request.method} ${request.routeOptions.url}`)
    ) {
      // Rendered by the exception filter like Fastify's own unsupported-media-type error (400).
      done(
        Object.assign(new Error('Unsupported content type'), {
          statusCode: 415,
          code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
        }),
      );
      return;
    }
    done();
  });
  // CSV imports arrive as text. (JSON and url-encoded forms, for RFC 8058 one-click
  // unsubscribe, are parsed by Nest's adapter.)
  // Fastify parses text/plain by default; the contract answers any type but JSON (and CSV
  // on imports) with 400, and a text body must not reach the import as if it were CSV.
  fastify.removeContentTypeParser('text/plain');
  fastify.addContentTypeParser('text/csv', { parseAs: 'string' }, (_req, body, done) =>
    done(null, body),
  );
  return adapter;
}

function setupOpenApi(app: NestFastifyApplication): void {
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app, RAW_ROUTE_OPENAPI_PATHS), {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
  });
}

/** Where `npm run build` puts the dashboard: dist/web, from src/ (ts-node, Jest) or dist/ alike. */
export const DEFAULT_WEB_ROOT = resolve(__dirname, '..', 'dist', 'web');

export interface CreateAppOptions {
  /** The dashboard's build folder (default DEFAULT_WEB_ROOT); tests point it at a fixture. */
  webRoot?: string;
}

/**
 * Builds the whole application for a given configuration: used by main.ts
 * and by the end-to-end tests, which boot several instances side by side.
 * The database must already be migrated (prepareDatabase).
 */
export async function createApp(
  config: AppConfig,
  options: CreateAppOptions = {},
): Promise<NestFastifyApplication> {
  const logger = createRootLogger(config);
  const metrics = new AppMetrics();
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register(config, metrics),
    createAdapter(config, logger, metrics),
    {
      logger: new PinoNestLogger(logger),
      abortOnError: false,
    },
  );
  app.enableShutdownHooks();
  // A worker serves no HTTP: no OpenAPI document (building it was memory the worker kept), no dashboard.
  const api = runsApi(config);
  if (api) {
    setupOpenApi(app);
  }
  try {
    if (api && config.adminToken)
      await mountQueueDashboard(app, config.adminToken, config.publicUrl.startsWith('https:'));
    if (api)
      await mountWebApp(app.getHttpAdapter().getInstance(), options.webRoot ?? DEFAULT_WEB_ROOT);
    await app.init();
    if (runsWorkers(config)) await app.get(QueueWorkersService).start();
  } catch (error) {
    // A refused boot (e.g. sealed keys no secret opens) must not leave pools and Redis clients open.
    await app.close().catch(() => undefined);
    throw error;
  }
  return app;
}
