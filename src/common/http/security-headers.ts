import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

/**
 * Security headers on every response through @fastify/helmet: nosniff, frames refused
 * (X-Frame-Options: DENY), HSTS only when the service is reached over https. No global CSP: the
 * API answers JSON, and the pages it serves (Swagger UI, the queue dashboard, unsubscribe) set
 * their own. Cross-origin loads stay allowed, or browsers would refuse the open-tracking pixel
 * that mail shows from another origin.
 */
export function registerSecurityHeaders(fastify: FastifyInstance, https: boolean): void {
  void fastify.register(helmet, {
    global: true,
    contentSecurityPolicy: false,
    crossOriginResourcePolicy: false,
    crossOriginOpenerPolicy: false,
    frameguard: { action: 'deny' },
    hsts: https ? { maxAge: 31_536_000, includeSubDomains: false } : false,
  });
}
