import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { buildErrorEnvelope, INTERNAL_ERROR, Rendered } from '../errors/all-exceptions.filter';

/*
 * Requests refused before any route (so before Nest's exception filter) get
 * the same error envelope and X-Request-Id as every other error:
 *
 * - Fastify's router refusals, through its `frameworkErrors` option: a path
 *   that is not valid percent-encoding (400) and a path parameter over
 *   `MAX_PARAM_LENGTH` characters (414).
 * - Node's HTTP parser refusals, through Fastify's `clientErrorHandler`: a
 *   request line and headers over 16 KB (431), a method Node does not know
 *   (`BREW`, 400), any other unparseable request (400). These happen on the
 *   socket only; no request object exists, so the request id is generated.
 *
 * The contract has no error code for 414 and 431: they are `BAD_REQUEST`
 * with the HTTP status in `error.statusCode` (README, docs/bad-input.md).
 */

/** Longest path parameter the router matches (Fastify's default); longer is a 414. */
export const MAX_PARAM_LENGTH = 100;

function renderFrameworkError(code: string | undefined, statusCode: number | undefined): Rendered {
  switch (code) {
    case 'FST_ERR_BAD_URL':
      return {
        status: 400,
        code: 'BAD_REQUEST',
        message: 'The request path is not valid percent-encoding',
      };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return {
        status: 414,
        code: 'BAD_REQUEST',
        message: `A path segment is longer than ${MAX_PARAM_LENGTH} characters`,
        suggestion: `Check the URL: ids are UUIDs, and no path parameter is longer than ${MAX_PARAM_LENGTH} characters.`,
      };
    default:
      return statusCode && statusCode >= 400 && statusCode < 500
        ? { status: statusCode, code: 'BAD_REQUEST', message: 'Request rejected' }
        : INTERNAL_ERROR;
  }
}

/** Fastify's `frameworkErrors`: router refusals (bad percent-encoding, over-long parameters). */
export function frameworkErrors(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const rendered = renderFrameworkError(error.code, error.statusCode);
  void reply
    .status(rendered.status)
    .header('x-request-id', request.id)
    .header('content-type', 'application/json; charset=utf-8')
    .send(JSON.stringify(buildErrorEnvelope(rendered, String(request.id))));
}

function renderClientError(code: string | undefined): Rendered {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        code: 'BAD_REQUEST',
        message: 'The request line and headers are larger than 16 KB',
        suggestion:
          'Send a shorter URL (use a request body or fewer query parameters) and smaller headers.',
      };
    case 'HPE_INVALID_METHOD':
      return {
        status: 400,
        code: 'BAD_REQUEST',
        message: 'Unknown HTTP method',
        suggestion: 'Use GET, POST, PATCH or DELETE as the API reference at /docs says.',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      // Node's requestTimeout: the request did not arrive whole in time (Node answers 408 too).
      return { status: 408, code: 'BAD_REQUEST', message: 'The request did not arrive in time' };
    default:
      return { status: 400, code: 'BAD_REQUEST', message: 'Malformed HTTP request' };
  }
}

/**
 * Fastify's `clientErrorHandler` (Node's 'clientError'): the request could not
 * be parsed, so the answer is written to the socket by hand, and the
 * connection closes.
 */
export function clientErrorHandler(
  this: FastifyInstance,
  error: Error & { code?: string },
  socket: Duplex,
): void {
  if (error.code === 'ECONNRESET' || !socket.writable) return;
  // A response already under way on this socket (a pipelined request): writing another would corrupt it.
  if ((socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
    socket.destroy(error);
    return;
  }
  const requestId = randomUUID();
  const rendered = renderClientError(error.code);
  const body = JSON.stringify(buildErrorEnvelope(rendered, requestId));
  this.log.info(
    { requestId, statusCode: rendered.status, code: error.code },
    'request refused by the HTTP parser',
  );
  socket.end(
    [
      `HTTP/1.1 ${rendered.status} ${STATUS_CODES[rendered.status] ?? 'Bad Request'}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
    // Then close our side too, as Node's own handler does: a client that keeps its half open
    // must not hold the connection (and a graceful shutdown) forever.
    () => socket.destroy(),
  );
  // Should the client never read the answer, the end callback never runs.
  setTimeout(() => socket.destroy(), CLIENT_ERROR_CLOSE_MS).unref();
}

/** Longest wait for a refused client to take the answer before the socket is destroyed. */
const CLIENT_ERROR_CLOSE_MS = 5_000;
