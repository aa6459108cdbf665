import { applyDecorators, Type } from '@nestjs/common';
import {
  ApiExtension,
  ApiExtraModels,
  ApiOperation,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import type {
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { DeletedResponse, ErrorEnvelopeResponse } from './error-envelope.response';

/**
 * Marks an operation that needs no API key; buildOpenApiDocument turns it into
 * `security: []` and drops the marker. Use beside the runtime's @NoApiKey().
 */
export const NO_KEY_EXTENSION = 'x-mailwright-no-key';
/** Per-media-type request schemas (Nest's @ApiBody gives every media type one schema); see ApiRequestContent. */
export const REQUEST_CONTENT_EXTENSION = 'x-mailwright-request-content';

type Schema = SchemaObject | ReferenceObject;
type Decorator = ClassDecorator & MethodDecorator;

/** A stable operationId (the generated client's method name) and a one-line summary. */
export function ApiOp(operationId: string, summary: string, description?: string): MethodDecorator {
  return ApiOperation({ operationId, summary, ...(description ? { description } : {}) });
}

/** `{success: true, data}`: the envelope every JSON success response has (src/common/http/envelope.ts). */
export function successEnvelope(data: Schema): SchemaObject {
  return {
    type: 'object',
    required: ['success', 'data'],
    properties: { success: { type: 'boolean', enum: [true] }, data },
  };
}

/** The list envelope (`data` of every list): one shape for every list. */
export function pageOf(item: Schema): SchemaObject {
  return {
    type: 'object',
    required: ['items', 'nextCursor', 'hasMore', 'total', 'totalEstimated'],
    properties: {
      items: { type: 'array', items: item, description: 'Newest first' },
      nextCursor: {
        type: 'string',
        nullable: true,
        description: 'Pass as `cursor` for the next page; null on the last page',
      },
      hasMore: { type: 'boolean' },
      total: {
        type: 'integer',
        minimum: 0,
        description:
          'Items matching the filters, all pages together: exact up to 10,000; past that, on the contact and email lists, an estimate (`totalEstimated`)',
      },
      totalEstimated: {
        type: 'boolean',
        description:
          "True when `total` is Postgres' planner estimate instead of a count (the contact and email lists past 10,000 matches); never fewer than 10,001 then",
      },
    },
  };
}

function ref(type: Type<unknown>): ReferenceObject {
  return { $ref: getSchemaPath(type) };
}

/** A JSON success response: `{success: true, data: <type>}` with the real status. */
export function ApiSuccess(
  status: 200 | 201 | 202,
  type: Type<unknown>,
  description?: string,
): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(type),
    ApiResponse({
      status,
      description: description ?? defaultSuccessDescription(status),
      schema: successEnvelope(ref(type)),
    }),
  );
}

/** A list: `{success: true, data: {items: [<item>], nextCursor, hasMore, total, totalEstimated}}`, status 200. */
export function ApiListSuccess(
  item: Type<unknown>,
  description = 'One page, newest first',
): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(item),
    ApiResponse({ status: 200, description, schema: successEnvelope(pageOf(ref(item))) }),
  );
}

/** DELETE: 200 `{success: true, data: {id, deleted: true}}`. */
export function ApiDeletedSuccess(): MethodDecorator {
  return ApiSuccess(200, DeletedResponse, 'Deleted');
}

function defaultSuccessDescription(status: number): string {
  if (status === 201) return 'Created';
  if (status === 202) return 'Accepted; the work continues on a queue worker';
  return 'OK';
}

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 422 | 429 | 500 | 503;

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'BAD_REQUEST: malformed JSON, unsupported content type, or a bad query or path parameter (error.errors names it)',
  401: 'MISSING_API_KEY (no "Authorization: Bearer" header) or INVALID_API_KEY (unknown or revoked key)',
  403: 'PROJECT_DISABLED, or FORBIDDEN (a pk_ key on anything but POST /v1/track and POST /v1/subscribe)',
  404: '<RESOURCE>_NOT_FOUND: no such id in this project',
  409: 'CONFLICT: a duplicate, or the resource is in a state that forbids the operation',
  413: 'PAYLOAD_TOO_LARGE: the body is over the limit (10 MB on /v1/send and /contacts/import, 1 MB elsewhere)',
  422: 'VALIDATION_ERROR: the body is invalid; error.errors lists each field {field, message, code}',
  429: "RATE_LIMIT_EXCEEDED: over the per-project limit, too many failed authentications from this address, or (segment previews, counts, members; template save, preview, test and send renders) the project's budget of expensive work (segment evaluation and slow rendering) is spent; see Retry-After",
  500: 'INTERNAL_ERROR: an unexpected error; report error.requestId',
  503: "TIMEOUT: the request's database work ran past API_STATEMENT_TIMEOUT_MS and was rolled back; retry after Retry-After",
};

/** One error response as a document object, for path items written by hand (raw routes). */
export function errorResponseObject(status: ErrorStatus, description?: string): ResponseObject {
  return {
    description: description ?? ERROR_DESCRIPTIONS[status],
    content: { 'application/json': { schema: ref(ErrorEnvelopeResponse) } },
  };
}

/**
 * Error responses, each with the ErrorEnvelope schema. On a controller they
 * apply to every operation; `descriptions` overrides the generic text where
 * an operation gives more specific codes (e.g. 403 DOMAIN_NOT_VERIFIED).
 */
export function ApiErrorResponses(
  statuses: ErrorStatus[],
  descriptions: Partial<Record<ErrorStatus, string>> = {},
): Decorator {
  return applyDecorators(
    ApiExtraModels(ErrorEnvelopeResponse),
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: descriptions[status] ?? ERROR_DESCRIPTIONS[status],
        schema: ref(ErrorEnvelopeResponse),
      }),
    ),
  ) as Decorator;
}

/** Routes behind the API-key guard: 401, 403, 429, 500 and 503 (statement timeout) on every operation. */
export function ApiKeyProtected(): Decorator {
  return ApiErrorResponses([401, 403, 429, 500, 503]);
}

/** Routes without a key (runtime: @NoApiKey()): `security: []` in the document. */
export function ApiNoKey(): Decorator {
  return ApiExtension(NO_KEY_EXTENSION, true) as Decorator;
}

/** A request body whose schema depends on its media type (JSON or CSV imports). */
export function ApiRequestContent(
  content: Record<string, Schema>,
  description?: string,
): MethodDecorator {
  return ApiExtension(REQUEST_CONTENT_EXTENSION, { description, content }) as MethodDecorator;
}
