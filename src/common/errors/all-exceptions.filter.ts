import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiException, FieldError } from './api-exception';
import { isQueryCanceled } from '../../database/postgres-errors';
import { codeForStatus, defaultSuggestion } from './error-codes';
import {
  flattenValidationErrors,
  RequestValidationException,
} from '../validation/validation-errors';

export interface ErrorEnvelope {
  success: false;
  /** The same text as error.message: the Plunk SDKs surface a top-level `message`. */
  message: string;
  error: {
    code: string;
    message: string;
    statusCode: number;
    requestId: string;
    errors?: FieldError[];
    suggestion: string;
  };
  timestamp: string;
}

/** An error as the envelope will say it; `buildErrorEnvelope` makes the body. */
export interface Rendered {
  status: number;
  code: string;
  message: string;
  errors?: FieldError[];
  suggestion?: string;
  headers?: Record<string, string>;
}

/** What an unexpected error is answered with (logged first, with the request id). */
export const INTERNAL_ERROR: Rendered = {
  status: 500,
  code: 'INTERNAL_ERROR',
  message: 'An unexpected error occurred',
};

/**
 * A request whose statement ran past API_STATEMENT_TIMEOUT_MS: Postgres cancelled it and the
 * transaction rolled back, so the client may simply try again later.
 */
export const STATEMENT_TIMEOUT: Rendered = {
  status: 503,
  code: 'TIMEOUT',
  message: 'The request took too long in the database and was stopped; nothing was changed',
  headers: { 'retry-after': '5' },
};

/** Fastify's own errors (body parsing, limits) carry a code and a statusCode. */
interface FrameworkError {
  code?: string;
  statusCode?: number;
  message?: string;
}

/** The contract answers an unsupported content type with 400, not HTTP's 415. */
const UNSUPPORTED_MEDIA_TYPE: Rendered = {
  status: 400,
  code: 'BAD_REQUEST',
  message: 'Unsupported content type; send application/json',
  errors: [{ field: 'content-type', message: 'Unsupported content type', code: 'invalid_string' }],
};

function fromFramework(error: FrameworkError): Rendered | null {
  if (typeof error.statusCode !== 'number' || error.statusCode < 400 || error.statusCode >= 500) {
    return null;
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'The request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return UNSUPPORTED_MEDIA_TYPE;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'BAD_REQUEST', message: 'The JSON body is empty' };
    default:
      if (error.statusCode === 400) {
        return { status: 400, code: 'BAD_REQUEST', message: 'Malformed request body' };
      }
      return {
        status: error.statusCode,
        code: codeForStatus(error.statusCode),
        message: 'Request rejected',
      };
  }
}

export function render(exception: unknown): Rendered | null {
  if (exception instanceof ApiException) {
    return {
      status: exception.getStatus(),
      code: exception.code,
      message: exception.message,
      errors: exception.details.errors,
      suggestion: exception.details.suggestion,
      headers: exception.details.headers,
    };
  }
  if (exception instanceof RequestValidationException) {
    const errors = flattenValidationErrors(exception.validationErrors);
    if (exception.location === 'body' || exception.location === 'custom') {
      return { status: 422, code: 'VALIDATION_ERROR', message: 'Validation failed', errors };
    }
    return {
      status: 400,
      code: 'BAD_REQUEST',
      message: `Invalid ${exception.location === 'query' ? 'query' : 'path'} parameter`,
      errors,
    };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 404) {
      return { status, code: 'ROUTE_NOT_FOUND', message: 'No route matches this method and path' };
    }
    if (status === 415) return UNSUPPORTED_MEDIA_TYPE;
    if (status === 400) {
      // Nest turns body-parser SyntaxErrors into BadRequestException; their text says where.
      return { status, code: 'BAD_REQUEST', message: `Malformed request: ${exception.message}` };
    }
    if (status < 500) return { status, code: codeForStatus(status), message: exception.message };
    return null;
  }
  if (isQueryCanceled(exception)) return STATEMENT_TIMEOUT;
  if (exception instanceof SyntaxError) {
    return {
      status: 400,
      code: 'BAD_REQUEST',
      message: 'Malformed request: the body is not valid JSON',
    };
  }
  if (exception && typeof exception === 'object') return fromFramework(exception as FrameworkError);
  return null;
}

/**
 * "Validation failed: <first problem> (and N more)": clients that show only
 * the message (the Plunk SDKs read the top-level one) still say what is wrong.
 */
function validationSummary(rendered: Rendered): string {
  const [first, ...rest] = rendered.errors ?? [];
  if (!first || rendered.message.includes(first.message)) return rendered.message;
  const more = rest.length > 0 ? ` (and ${rest.length} more)` : '';
  return `${rendered.message}: ${first.field ? `${first.field}: ` : ''}${first.message}${more}`;
}

/**
 * The envelope's body for a rendered error: the one shape every error has,
 * whether the filter writes it or the framework's early hooks
 * (src/common/http/framework-errors.ts) do, before any route ran.
 */
export function buildErrorEnvelope(rendered: Rendered, requestId: string): ErrorEnvelope {
  const final =
    rendered.code === 'VALIDATION_ERROR'
      ? { ...rendered, message: validationSummary(rendered) }
      : rendered;
  return {
    success: false,
    message: final.message,
    error: {
      code: final.code,
      message: final.message,
      statusCode: final.status,
      requestId,
      ...(final.errors && final.errors.length > 0 ? { errors: final.errors } : {}),
      suggestion: final.suggestion || defaultSuggestion(final.code),
    },
    timestamp: new Date().toISOString(),
  };
}

/**
 * The one place that writes error responses: our ApiExceptions, validation
 * failures, Nest's and Fastify's own errors. Unknown errors become a generic
 * 500 and are logged with the request id; no stack or SQL leaves the process.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const requestId = String(request?.id ?? '');

    let rendered = render(exception);
    if (!rendered) {
      this.logger.error(
        { err: exception, requestId, method: request?.method, url: request?.url },
        'Unhandled error',
      );
      rendered = INTERNAL_ERROR;
    } else if (rendered === STATEMENT_TIMEOUT) {
      // The operator's sign of a query that outgrew API_STATEMENT_TIMEOUT_MS (or of lock waits).
      this.logger.warn(
        { requestId, method: request?.method, url: request?.url },
        'Statement timeout',
      );
    }

    if (reply.sent) return;
    sendErrorEnvelope(reply, rendered, requestId);
  }
}

/** Answers `rendered` as the envelope (its extra headers, the request id): the filter's answer, for routes it does not see. */
export function sendErrorEnvelope(
  reply: FastifyReply,
  rendered: Rendered,
  requestId: string,
): void {
  for (const [name, value] of Object.entries(rendered.headers ?? {})) reply.header(name, value);
  void reply
    .status(rendered.status)
    .header('x-request-id', requestId)
    .header('content-type', 'application/json; charset=utf-8')
    .send(buildErrorEnvelope(rendered, requestId));
}
