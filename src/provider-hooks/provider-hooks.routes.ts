import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { PathsObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { INTERNAL_ERROR, render, sendErrorEnvelope } from '../common/errors/all-exceptions.filter';
import { DEFAULT_BODY_LIMIT } from '../common/http/body-limits';
import { errorResponseObject, NO_KEY_EXTENSION } from '../common/openapi/decorators';
import { PROVIDERS } from './provider-hook.entity';
import { ProviderHooksService } from './provider-hooks.service';

type InboundRequest = FastifyRequest<{
  Params: { provider: string; inboundId: string };
  Body: Buffer | undefined;
}>;

/**
 * `POST /inbound/{provider}/{inboundId}`, a raw Fastify route (docs/architecture.md,
 * "Raw routes"): signatures cover the body's exact bytes, and SNS posts its
 * JSON as text/plain, which the API refuses everywhere else. In a plugin
 * scope of its own, the route reads any content type as bytes; Fastify's
 * hooks (request id, metrics, the request log) still run. No key: the
 * provider's signature or credentials authenticate the request.
 */
@Injectable()
export class ProviderHooksRoutes implements OnModuleInit {
  private readonly logger = new Logger(ProviderHooksRoutes.name);

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly hooks: ProviderHooksService,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    void fastify.register((scope: FastifyInstance, _options: unknown, done: () => void) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        '*',
        { parseAs: 'buffer', bodyLimit: DEFAULT_BODY_LIMIT },
        (_request, body, parsed) => parsed(null, body),
      );
      scope.post('/inbound/:provider/:inboundId', (request: InboundRequest, reply) =>
        this.receive(request, reply),
      );
      done();
    });
  }

  private async receive(request: InboundRequest, reply: FastifyReply): Promise<void> {
    try {
      const outcome = await this.hooks.receive(
        request.params.provider,
        request.params.inboundId,
        request.headers,
        Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
      );
      // The success envelope's hook wraps it, as for every route.
      void reply.code(200).send(outcome);
    } catch (error) {
      let rendered = render(error);
      if (!rendered || rendered.status >= 500) {
        if (!rendered)
          this.logger.error(
            {
              err: error,
              requestId: request.id,
              method: request.method,
              url: request.routeOptions.url,
            },
            'Unhandled error',
          );
        rendered ??= INTERNAL_ERROR;
      }
      if (!reply.sent) sendErrorEnvelope(reply, rendered, String(request.id));
    }
  }
}

const NO_KEY: object = { [NO_KEY_EXTENSION]: true };

/** The OpenAPI path item of the route above. */
export const PROVIDER_HOOKS_OPENAPI_PATHS: PathsObject = {
  '/inbound/{provider}/{inboundId}': {
    post: {
      operationId: 'inbound_receive',
      summary:
        "A relay provider's bounce and complaint webhook (the URL of PUT /project/inbound/{provider})",
      description:
        "The provider's own payload, verified with its signature or credentials: ses (SNS messages, text/plain JSON; subscription confirmations are followed), postmark (HTTP basic auth), mailgun (signing key), sendgrid (signed event webhook), resend (Standard Webhooks). Bounces, complaints and delays are applied by the bounce policy; other events are answered 200 and ignored.",
      tags: ['bounces'],
      ...NO_KEY,
      parameters: [
        {
          name: 'provider',
          in: 'path',
          required: true,
          schema: { type: 'string', enum: [...PROVIDERS] },
        },
        {
          name: 'inboundId',
          in: 'path',
          required: true,
          description: 'The unguessable id of the project’s webhook URL',
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: { type: 'object', additionalProperties: true } },
          'text/plain': { schema: { type: 'string' } },
        },
      },
      responses: {
        '200': {
          description: 'Verified; what the reports did',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['success', 'data'],
                properties: {
                  success: { type: 'boolean', enum: [true] },
                  data: {
                    type: 'object',
                    required: ['received', 'applied', 'duplicate', 'unmatched', 'ignored'],
                    properties: {
                      received: {
                        type: 'integer',
                        description: 'bounce, complaint and delay reports in the request',
                      },
                      applied: { type: 'integer' },
                      duplicate: { type: 'integer', description: 'already received (same event)' },
                      unmatched: { type: 'integer', description: 'no email of this project found' },
                      ignored: {
                        type: 'integer',
                        description: "the email's status allowed no change",
                      },
                    },
                  },
                },
              },
            },
          },
        },
        '400': errorResponseObject(
          400,
          'BAD_REQUEST: an unknown provider, or a body that is not the provider’s JSON',
        ),
        '401': errorResponseObject(
          401,
          'INVALID_SIGNATURE: a missing or wrong signature or credentials, or an unknown webhook URL; nothing is applied',
        ),
        '403': errorResponseObject(403, 'PROJECT_DISABLED: the provider should retry later'),
        '413': errorResponseObject(413),
        '500': errorResponseObject(500),
        '503': errorResponseObject(
          503,
          'SERVICE_UNAVAILABLE (an SNS subscription could not be confirmed) or TIMEOUT; the provider retries',
        ),
      },
    },
  },
};
