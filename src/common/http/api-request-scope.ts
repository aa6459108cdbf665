import { AsyncResource } from 'node:async_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { runAsApiRequest } from '../../database/statement-timeout';

const scopeOf = new WeakMap<FastifyRequest, AsyncResource>();

/**
 * Runs every request's handling as API work (database/statement-timeout.ts), so its statements
 * get API_STATEMENT_TIMEOUT_MS even in a process that also runs the workers. Fastify parses the
 * body outside the onRequest hook's context, so the scope is entered again before validation,
 * whence guards, pipes and the handler run.
 */
export function registerApiRequestScope(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, _reply, done) => {
    runAsApiRequest(() => {
      const scope = new AsyncResource('mailwright-api-request');
      scopeOf.set(request, scope);
      scope.runInAsyncScope(done);
    });
  });
  fastify.addHook('preValidation', (request, _reply, done) => {
    const scope = scopeOf.get(request);
    if (scope) scope.runInAsyncScope(done);
    else done();
  });
}
