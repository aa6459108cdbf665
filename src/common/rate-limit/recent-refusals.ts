import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerKeyHash } from '../auth/api-key.crypto';
import { buildErrorEnvelope } from '../errors/all-exceptions.filter';
import { generateRequestId } from '../http/request-id';

/**
 * How long a refusal is repeated without asking again. Short, so a key revoked or a project
 * disabled meanwhile gets its own answer (401, 403) within seconds, and a budget repaid early
 * (another process's clock, a refill) lets the key back in soon.
 */
const REMEMBER_MS = 10_000;
/** Keys remembered at most; past it, expired entries go first, then the oldest. */
const MAX_ENTRIES = 10_000;
/**
 * A refused request declaring a longer body gets its 429 with `Connection: close`: Node then
 * closes the socket once the answer is written instead of reading the body to keep the connection.
 * Read and discarded, hundreds of kilobytes a request from a client retrying in a tight loop
 * (bench:noisy-neighbour's 720 kB sends) counted as external memory and kept the API's garbage
 * collector running mark-compacts back to back, which every tenant's requests waited behind.
 */
export const DRAIN_LIMIT_BYTES = 65_536;

/** What the guard and the filter leave on a request for the hooks below. */
export interface RefusalMarks {
  /** The bearer key's hash, set once the key authenticated. */
  refusalKeyHash?: Buffer;
  /** 'project': the project's request budget refused it, so every route of the key is refused. */
  refusalScope?: 'project';
}

interface Refusal {
  until: number;
  message: string;
  /** RateLimit-Limit of a project-budget refusal. */
  limit?: string;
  /** The route template refused (`*`: every route of the key), for the metrics. */
  route: string;
}

/**
 * Counts what the server's request listener answers before Fastify sees the request (a repeated
 * refusal): such requests pass no onResponse hook.
 */
export interface EarlyRefusalObserver {
  (method: string, route: string, seconds: number): void;
}

/**
 * Headers of a 429 that belong to one request or caller, not copied from the first refusal
 * onto the ones repeated before routing (they are set again, or not at all, for each).
 */
const PER_REQUEST_HEADERS = new Set([
  'content-length',
  'content-type',
  'retry-after',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-request-id',
  'connection',
  'set-cookie',
]);

type MarkedRequest = FastifyRequest & RefusalMarks;

/**
 * A key that was just refused 429 (the project's request budget, or its budget of expensive work
 * on a route) is refused again, before its body is read or parsed and without a Redis round
 * trip, until its Retry-After (at most REMEMBER_MS). A client that ignores Retry-After and
 * retries in a tight loop then costs the event loop a header lookup per request instead of a
 * body parse, an authentication and a budget check: without this, one tenant's refused requests
 * (720 kB bodies in bench:noisy-neighbour) slowed every other tenant's.
 *
 * Repeated refusals are answered by the HTTP server's request listener, before Fastify routes the
 * request and runs its hooks (a quarter of a millisecond of the event loop each, at a thousand a
 * second in bench:noisy-neighbour), with the headers Fastify's hooks gave the first refusal
 * (security headers) and a request id of their own; they are counted in the request metrics
 * (`observe`) but not logged one by one. A request with an Origin header (a browser, which needs
 * the CORS headers) and one whose path is not the refused route's own (a route with parameters)
 * go through Fastify's `onRequest` hook below, which refuses them the same way. Per process; the
 * refusal itself is always decided by the guard or the budget first.
 */
export function registerRecentRefusals(
  fastify: FastifyInstance,
  observe?: EarlyRefusalObserver,
): void {
  const refusals = new Map<string, Refusal>();
  /** The headers Fastify's hooks put on the last 429 remembered, less the per-request ones. */
  let sharedHeaders: OutgoingHttpHeaders = {};
  /** The live refusal of the request's key: every route of it, or `route` (a template or a path). */
  const find = (
    authorization: string | undefined,
    method: string | undefined,
    route: string | undefined,
    now: number,
  ): Refusal | null => {
    const hash = bearerKeyHash(authorization)?.toString('base64');
    if (!hash) return null;
    return live(refusals, `${hash} *`, now) ?? live(refusals, `${hash} ${method} ${route}`, now);
  };

  const server = fastify.server as Server | undefined;
  const [handler] = (server?.listeners('request') ?? []) as Array<
    (req: IncomingMessage, res: ServerResponse) => void
  >;
  if (server && handler) {
    server.removeListener('request', handler);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (refusals.size === 0 || req.headers.origin !== undefined) return handler(req, res);
      const started = performance.now();
      const now = Date.now();
      // A route without parameters is remembered under its template, which is then its path.
      const path = (req.url ?? '').split('?', 1)[0];
      const refusal = find(req.headers.authorization, req.method, path, now);
      if (!refusal) return handler(req, res);
      const id = generateRequestId(req);
      const seconds = secondsLeft(refusal, now);
      const body = refusalBody(refusal, id);
      const headers: OutgoingHttpHeaders = {
        ...sharedHeaders,
        'x-request-id': id,
        'retry-after': seconds,
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        ...rateLimitHeaders(refusal, seconds),
      };
      if (longBody(req)) {
        headers.connection = 'close';
        closeUnread(req, res);
      }
      res.writeHead(429, headers);
      res.end(body);
      observe?.(req.method ?? 'GET', refusal.route, (performance.now() - started) / 1000);
    });
  }

  fastify.addHook('onRequest', (request, reply, done) => {
    if (refusals.size === 0) return done();
    const now = Date.now();
    const refusal = find(
      request.headers.authorization,
      request.method,
      request.routeOptions.url,
      now,
    );
    if (!refusal) return done();
    const seconds = secondsLeft(refusal, now);
    reply
      .code(429)
      .header('retry-after', seconds)
      .header('content-type', 'application/json; charset=utf-8');
    if (longBody(request.raw)) {
      reply.header('connection', 'close');
      closeUnread(request.raw, reply.raw);
    }
    for (const [name, value] of Object.entries(rateLimitHeaders(refusal, seconds)))
      reply.header(name, value);
    void reply.send(refusalBody(refusal, String(request.id)));
  });

  fastify.addHook('onSend', (request: MarkedRequest, reply: FastifyReply, payload, done) => {
    const hash = request.refusalKeyHash;
    if (reply.statusCode !== 429 || !hash) return done(null, payload);
    const retryAfter = Number(reply.getHeader('retry-after'));
    if (!(retryAfter > 0)) return done(null, payload);
    const project = request.refusalScope === 'project';
    const until = Date.now() + Math.min(retryAfter * 1000, REMEMBER_MS);
    const limit = reply.getHeader('ratelimit-limit');
    const refusal: Refusal = {
      until,
      message: messageOf(payload),
      route: project ? '*' : (request.routeOptions.url ?? 'unmatched'),
      ...(project && limit !== undefined ? { limit: String(limit) } : {}),
    };
    const prefix = hash.toString('base64');
    remember(
      refusals,
      project ? `${prefix} *` : `${prefix} ${request.method} ${request.routeOptions.url}`,
      refusal,
    );
    sharedHeaders = Object.fromEntries(
      Object.entries(reply.getHeaders()).filter(
        ([name]) => !PER_REQUEST_HEADERS.has(name) && !name.startsWith('access-control-'),
      ),
    ) as OutgoingHttpHeaders;
    done(null, payload);
  });
}

/** Retry-After of a repeated refusal: its seconds left, at least 1. */
function secondsLeft(refusal: Refusal, now: number): string {
  return String(Math.max(1, Math.ceil((refusal.until - now) / 1000)));
}

/** A request announcing a body over DRAIN_LIMIT_BYTES (its refusal leaves the body unread). */
function longBody(req: IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > DRAIN_LIMIT_BYTES;
}

function rateLimitHeaders(refusal: Refusal, seconds: string): Record<string, string> {
  return refusal.limit
    ? { 'ratelimit-limit': refusal.limit, 'ratelimit-remaining': '0', 'ratelimit-reset': seconds }
    : {};
}

function refusalBody(refusal: Refusal, requestId: string): string {
  return JSON.stringify(
    buildErrorEnvelope(
      { status: 429, code: 'RATE_LIMIT_EXCEEDED', message: refusal.message },
      requestId,
    ),
  );
}

/**
 * A refused request announcing a long body is not read: the socket stops reading now (what
 * arrived stays in the kernel's buffers; what Node read counted as external memory, which kept
 * the garbage collector busy) and is closed once the answer is handed to the kernel.
 */
function closeUnread(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket as { pause?: () => void; destroy?: () => void } | null | undefined;
  socket?.pause?.();
  res.once('finish', () => socket?.destroy?.());
}

function live(refusals: Map<string, Refusal>, key: string, now: number): Refusal | null {
  const refusal = refusals.get(key);
  if (!refusal) return null;
  if (refusal.until > now) return refusal;
  refusals.delete(key);
  return null;
}

function remember(refusals: Map<string, Refusal>, key: string, refusal: Refusal): void {
  refusals.delete(key);
  if (refusals.size >= MAX_ENTRIES) {
    const now = Date.now();
    for (const [k, r] of refusals) if (r.until <= now) refusals.delete(k);
    // Still full: the oldest insertion goes (a Map iterates in insertion order).
    while (refusals.size >= MAX_ENTRIES) refusals.delete(refusals.keys().next().value as string);
  }
  refusals.set(key, refusal);
}

function messageOf(payload: unknown): string {
  try {
    const text =
      typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString() : '';
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') return message;
  } catch {
    // not our envelope: the generic text below
  }
  return 'Rate limit exceeded';
}
