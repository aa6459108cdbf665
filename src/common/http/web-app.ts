import { existsSync, statSync } from 'node:fs';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

export const WEB_APP_PATH = '/app/';

/**
 * The dashboard's policy: its own scripts and styles only (Vite emits no inline script), the API
 * on the same origin, images from anywhere (email previews show the sender's images), never
 * framed. Inline style attributes stay allowed for the chart library.
 */
export const WEB_APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self' blob: data:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Vite puts content-hashed files under assets/: a new build has new names, so they never go stale. */
const HASHED_ASSET = /[/\\]assets[/\\]/;

function setCachingAndPolicy(reply: FastifyReply, path: string): void {
  void reply.header(
    'cache-control',
    HASHED_ASSET.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache',
  );
  void reply.header('content-security-policy', WEB_APP_CSP);
}

function builtAt(root: string): boolean {
  return existsSync(root) && statSync(root).isDirectory() && existsSync(`${root}/index.html`);
}

/**
 * Serves the dashboard's build (web/, built by `npm run build` into `root`) under /app/: each
 * file of the build as itself, any other path under /app/ as index.html so the app's own router
 * answers deep links, and `GET /` sends a browser there. Without a build (tests, an API-only
 * checkout), /app/ answers 404 saying so. The API's routes are untouched.
 */
export async function mountWebApp(fastify: FastifyInstance, root: string): Promise<void> {
  const built = builtAt(root);
  await fastify.register(async (scope) => {
    if (!built) {
      const notBuilt = (_request: unknown, reply: FastifyReply) =>
        reply
          .code(404)
          .header('content-type', 'text/plain; charset=utf-8')
          .header('cache-control', 'no-cache')
          .send('The dashboard was not built: run `npm run build`, then restart the service.\n');
      scope.get('/app', notBuilt);
      scope.get('/app/*', notBuilt);
      return;
    }
    // Routes for the build's files are made once at boot (wildcard: false): a rebuild means a restart.
    await scope.register(fastifyStatic, {
      root,
      prefix: WEB_APP_PATH,
      wildcard: false,
      cacheControl: false,
      setHeaders: (reply, path) => setCachingAndPolicy(reply as unknown as FastifyReply, path),
      index: false,
      dotfiles: 'ignore',
    });
    const appPage = (_request: unknown, reply: FastifyReply) => {
      setCachingAndPolicy(reply, `${root}/index.html`);
      return reply.sendFile('index.html');
    };
    scope.get('/app', (_request, reply) => reply.redirect(WEB_APP_PATH, 301));
    scope.get('/app/', appPage);
    scope.get('/app/*', appPage);
  });
  // A browser at the root is sent to the dashboard; any other client gets what it got before.
  fastify.get('/', (request, reply) => {
    if ((request.headers.accept ?? '').includes('text/html')) {
      return reply.header('cache-control', 'no-cache').redirect(WEB_APP_PATH, 302);
    }
    return reply.callNotFound();
  });
}
