import type { FastifyCorsOptions, FastifyCorsOptionsDelegateCallback } from '@fastify/cors';
import type { FastifyRequest } from 'fastify';

/** Paths a browser may call from any origin: public (`pk_`) keys exist for exactly this. */
const PUBLIC_BROWSER_PATHS: ReadonlySet<string> = new Set(['/v1/track']);

/** Headers a browser script may read from our answers (request id, rate-limit state). */
const EXPOSED_HEADERS = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'];

/** A day: browsers cap it lower (Chrome 2 h) and ask again. */
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/**
 * CORS per request: `POST /v1/track` allows every origin without credentials,
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
      ? { ...common, origin: [...allowedOrigins], methods: ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE'] }
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
