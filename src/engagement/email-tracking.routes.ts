import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { PathsObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  INTERNAL_ERROR,
  Rendered,
  sendErrorEnvelope,
} from '../common/errors/all-exceptions.filter';
import { errorResponseObject, NO_KEY_EXTENSION } from '../common/openapi/decorators';
import { EmailTrackingService } from './email-tracking.service';

/** The 43-byte transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
const NO_CACHE = 'no-store, no-cache, must-revalidate, max-age=0';

const NOT_FOUND: Rendered = {
  status: 404,
  code: 'LINK_NOT_FOUND',
  message: 'This tracking link is not valid',
  suggestion: 'Use the link exactly as it appears in the email.',
};

/**
 * The open pixel (`GET /t/o/{token}`) and tracked links (`GET /t/c/{token}`),
 * the one place where routes are Fastify's own instead of a Nest controller's
 * (docs/architecture.md, "Raw routes"). Both answer from the signed token
 * alone, before anything is written (EmailTrackingService counts the hit and
 * writes it later), so they are served when the database is down. They take
 * no key, no body and no query, so Nest's per-request pipeline (guard,
 * validation pipe, exception zone, parameter resolution) had nothing to do
 * for them but cost a fifth of their throughput (bench:tracking). Everything
 * Fastify runs for every route still runs: the request id, CORS gate,
 * metrics and the request log. Errors are the usual envelope.
 *
 * Documented in OpenAPI by EMAIL_TRACKING_OPENAPI_PATHS (the decorators that
 * document controllers cannot reach them).
 */
@Injectable()
export class EmailTrackingRoutes implements OnModuleInit {
  private readonly logger = new Logger(EmailTrackingRoutes.name);

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly tracking: EmailTrackingService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.get<{ Params: { token: string } }>('/t/o/:token', (request, reply) => {
      this.answer(request, reply, () => {
        if (this.tracking.open(request.params.token) === null) return NOT_FOUND;
        void reply
          .code(200)
          .header('content-type', 'image/gif')
          .header('cache-control', NO_CACHE)
          .header('pragma', 'no-cache')
          .header('expires', '0')
          .send(PIXEL);
        return null;
      });
    });
    // A wildcard: a click token carries its URL (up to ~2.8 KB), past the router's 100-character parameter limit.
    fastify.get<{ Params: { '*': string } }>('/t/c/*', (request, reply) => {
      this.answer(request, reply, () => {
        const target = this.tracking.click(request.params['*']);
        if (target === null) return NOT_FOUND;
        void reply
          .code(302)
          .header('location', locationOf(target.url))
          .header('cache-control', NO_CACHE)
          .header('content-type', 'text/plain; charset=utf-8')
          .header('referrer-policy', 'no-referrer')
          .send('');
        return null;
      });
    });
  }

  /** Runs `handle`; an error it returns, or throws, is answered with the envelope (as the exception filter would). */
  private answer(
    request: FastifyRequest,
    reply: FastifyReply,
    handle: () => Rendered | null,
  ): void {
    let rendered: Rendered | null;
    try {
      rendered = handle();
    } catch (error) {
      this.logger.error(
        {
          err: error,
          requestId: request.id,
          method: request.method,
          url: request.routeOptions.url,
        },
        'Unhandled error',
      );
      rendered = INTERNAL_ERROR;
    }
    if (rendered === null || reply.sent) return;
    sendErrorEnvelope(reply, rendered, String(request.id));
  }
}

/**
 * The signed URL as a Location value any HTTP stack accepts: the URL parser drops tabs and line
 * breaks and percent-encodes (or punycodes) what is not ASCII, as a browser following the link would.
 * A URL it cannot parse is sent as it was signed, percent-encoded.
 */
function locationOf(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return encodeURI(url.replace(/[\t\r\n]/g, ''));
  }
}

/** The marker of keyless operations (`security: []`, no rate-limit headers), which OperationObject does not declare. */
const NO_KEY: object = { [NO_KEY_EXTENSION]: true };
const TOKEN_ERRORS = {
  '404': errorResponseObject(
    404,
    'A forged, altered or truncated token (LINK_NOT_FOUND): nothing is recorded',
  ),
  '500': errorResponseObject(500),
};

/** The OpenAPI path items of the routes above (finished like every other: shared headers, `security: []`). */
export const EMAIL_TRACKING_OPENAPI_PATHS: PathsObject = {
  '/t/o/{token}': {
    get: {
      operationId: 'tracking_open',
      summary: 'The open pixel of a tracked email (a 1x1 GIF; counts an open)',
      tags: ['tracking'],
      ...NO_KEY,
      parameters: [
        {
          name: 'token',
          in: 'path',
          required: true,
          description: 'The signed token of the pixel in the email',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': {
          description: 'A transparent 1x1 GIF (43 bytes), never cached',
          content: { 'image/gif': { schema: { type: 'string', format: 'binary' } } },
        },
        ...TOKEN_ERRORS,
      },
    },
  },
  '/t/c/{token}': {
    get: {
      operationId: 'tracking_click',
      summary: 'A tracked link: redirects to the link that was signed (counts a click)',
      tags: ['tracking'],
      ...NO_KEY,
      parameters: [
        {
          name: 'token',
          in: 'path',
          required: true,
          description: 'The signed token of the link in the email (it carries the URL)',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '302': {
          description:
            'Redirect to the original URL (Location); only URLs signed into a token are ever targets',
          headers: { Location: { required: true, schema: { type: 'string', format: 'uri' } } },
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        ...TOKEN_ERRORS,
      },
    },
  },
};
