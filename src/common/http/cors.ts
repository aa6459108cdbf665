import fastifyCors, { FastifyCorsOptions, FastifyCorsOptionsDelegateCallback } from '@fastify/cors';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';

/** Paths a browser may call from any origin: public (`pk_`) keys exist for exactly these. */
const PUBLIC_BROWSER_PATHS: ReadonlySet<string> = new Set(['/v1/track', '/v1/subscribe']);

/** Headers a browser script may read from our answers (request id, rate-limit state). */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
];

/** A day: browsers cap it lower (Chrome 2 h) and ask again. */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/**
 * CORS per request: `POST /v1/track` and `POST /v1/subscribe` allow every origin without credentials,
 * so `pk_` keys work from any page; secret-key endpoints answer browsers only
 * from the CORS_ORIGINS list (none by default: no CORS headers, and a
 * preflight is a 404). Keys travel in the Authorization header, never in
 * cookies, so credentials are never allowed.
 */
export function corsOptions(allowedOrigins: readonly string[]): FastifyCorsOptions {
  const common = {
    credentials: false,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    // A bare OPTIONS without the preflight headers is answered like a preflight, not with plain text.
    strictPreflight: false,
  };
  const publicOptions: FastifyCorsOptions = { ...common, origin: '*', methods: ['POST'] };
  const secretOptions: FastifyCorsOptions =
    allowedOrigins.length > 0
      ? {
          ...common,
          origin: [...allowedOrigins],
          methods: ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE'],
        }
      : { origin: false };
  const delegator: FastifyCorsOptionsDelegateCallback = (request, callback) => {
    callback(null, PUBLIC_BROWSER_PATHS.has(pathOf(request)) ? publicOptions : secretOptions);
  };
  return { delegator };
}

function pathOf(request: FastifyRequest): string {
  const url = request.raw.url ?? request.url;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

type RequestHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void;

/**
 * Registers @fastify/cors with `corsOptions`, run only for requests a browser
 * sent cross-origin: those with an `Origin` header, and every OPTIONS (a
 * preflight, or a bare OPTIONS answered like one). Other requests (servers,
 * SDKs, the open pixel and tracked links, which a mail client fetches or a
 * browser navigates to) get only `Vary: Origin`, as the plugin gives them,
 * and none of its work: it resolves and copies its options for every request
 * it sees, which was 8% of the CPU of the open pixel under load.
 *
 * The plugin adds one `onRequest` hook (kept here and called through the
 * gate) and its `OPTIONS *` route (added to `fastify` as it is).
 */
export function registerCors(fastify: FastifyInstance, allowedOrigins: readonly string[]): void {
  let corsHook: RequestHook | undefined;
  const capture: FastifyInstance = new Proxy(fastify, {
    get(target, prop) {
      if (prop === 'addHook') {
        return (name: string, hook: RequestHook) => {
          if (name !== 'onRequest' || corsHook)
            throw new Error(`@fastify/cors added an unexpected ${name} hook`);
          corsHook = hook;
          return capture;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  fastifyCors(capture, corsOptions(allowedOrigins), (error) => {
    if (error) throw error;
  });
  const hook = corsHook;
  if (!hook) throw new Error('@fastify/cors added no onRequest hook');
  fastify.addHook('onRequest', (request, reply, done) => {
    if (request.headers.origin === undefined && request.raw.method !== 'OPTIONS') {
      void reply.header('vary', 'Origin');
      done();
      return;
    }
    hook(request, reply, done);
  });
}
