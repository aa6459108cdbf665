import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerKeyHash } from '../auth/api-key.crypto';
import { buildErrorEnvelope } from '../errors/all-exceptions.filter';

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
}

type MarkedRequest = FastifyRequest & RefusalMarks;

/**
 * A key that was just refused 429 (the project's request budget, or its budget of expensive work
 * on a route) is refused again here, in `onRequest`, before its body is read or parsed and
 * without a Redis round trip, until its Retry-After (at most REMEMBER_MS). A client that ignores
 * Retry-After and retries in a tight loop then costs the event loop a header lookup per request
 * instead of a body parse, an authentication and a budget check: without this, one tenant's
 * refused requests (720 kB bodies in bench:noisy-neighbour) slowed every other tenant's.
 * Per process; the refusal itself is always decided by the guard or the budget first.
 */
export function registerRecentRefusals(fastify: FastifyInstance): void {
  const refusals = new Map<string, Refusal>();

  fastify.addHook('onRequest', (request, reply, done) => {
    if (refusals.size === 0) return done();
    const hash = bearerKeyHash(request.headers.authorization)?.toString('base64');
    if (!hash) return done();
    const now = Date.now();
    const route = `${hash} ${request.method} ${request.routeOptions.url}`;
    const project = `${hash} *`;
    const refusal = live(refusals, project, now) ?? live(refusals, route, now);
    if (!refusal) return done();
    const seconds = String(Math.max(1, Math.ceil((refusal.until - now) / 1000)));
    reply
      .code(429)
      .header('retry-after', seconds)
      .header('content-type', 'application/json; charset=utf-8');
    if (Number(request.headers['content-length'] ?? 0) > DRAIN_LIMIT_BYTES) {
      reply.header('connection', 'close');
      // Nothing more of the body is read meanwhile: what arrived already stays in the kernel's
      // buffers, and what Node had read before counted as external memory (more mark-compacts).
      (request.raw.socket as { pause?: () => void } | null | undefined)?.pause?.();
      // Closed as soon as the answer is handed to the kernel, before Node reads more of the body.
      reply.raw.once('finish', () => {
        const socket = request.raw.socket as { destroy?: () => void } | null | undefined;
        if (typeof socket?.destroy === 'function') socket.destroy();
      });
    }
    if (refusal.limit) {
      reply
        .header('ratelimit-limit', refusal.limit)
        .header('ratelimit-remaining', '0')
        .header('ratelimit-reset', seconds);
    }
    void reply.send(
      JSON.stringify(
        buildErrorEnvelope(
          { status: 429, code: 'RATE_LIMIT_EXCEEDED', message: refusal.message },
          String(request.id),
        ),
      ),
    );
  });

  fastify.addHook('onSend', (request: MarkedRequest, reply: FastifyReply, payload, done) => {
    const hash = request.refusalKeyHash;
    if (reply.statusCode !== 429 || !hash) return done(null, payload);
    const retryAfter = Number(reply.getHeader('retry-after'));
    if (!(retryAfter > 0)) return done(null, payload);
    const key =
      request.refusalScope === 'project'
        ? `${hash.toString('base64')} *`
        : `${hash.toString('base64')} ${request.method} ${request.routeOptions.url}`;
    const limit = reply.getHeader('ratelimit-limit');
    remember(refusals, key, {
      until: Date.now() + Math.min(retryAfter * 1000, REMEMBER_MS),
      message: messageOf(payload),
      ...(request.refusalScope === 'project' && limit !== undefined
        ? { limit: String(limit) }
        : {}),
    });
    done(null, payload);
  });
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
