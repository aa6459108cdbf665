import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import type { FastifyInstance } from 'fastify';

/** Fastify route-config flag set by @RawResponse(). */
const RAW_RESPONSE = 'mailwrightRawResponse';

/**
 * The handler's result is sent as is (health probes, HTML pages). On a class,
 * applies to every handler of the controller.
 */
export function RawResponse(): ClassDecorator & MethodDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const handlers: unknown[] = descriptor
      ? [descriptor.value]
      : Object.getOwnPropertyNames((target as { prototype: object }).prototype)
          .filter((name) => name !== 'constructor')
          .map((name) => (target as { prototype: Record<string, unknown> }).prototype[name]);
    for (const handler of handlers) {
      if (typeof handler !== 'function') continue;
      const config =
        (Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) as object | undefined) ?? {};
      Reflect.defineMetadata(
        FASTIFY_ROUTE_CONFIG_METADATA,
        { ...config, [RAW_RESPONSE]: true },
        handler,
      );
    }
  };
}

/**
 * Wraps every successful JSON result in `{ success: true, data }`. This is a
 * Fastify preSerialization hook rather than a Nest interceptor: profiling
 * showed the interceptor's RxJS pipeline and async-context binding costing
 * about a fifth of the API's CPU per request. Errors (already enveloped by the
 * exception filter), raw routes and routes Nest did not register (Swagger,
 * the queue dashboard under /admin/) pass through untouched.
 */
export function registerSuccessEnvelope(fastify: FastifyInstance): void {
  fastify.addHook('preSerialization', (request, reply, payload, done) => {
    const config = request.routeOptions.config as unknown as Record<string, unknown>;
    if (reply.statusCode >= 400 || config[RAW_RESPONSE] || !isNestRoute(request.routeOptions.url)) {
      done(null, payload);
      return;
    }
    done(null, { success: true, data: payload ?? null });
  });
}

function isNestRoute(url: string | undefined): boolean {
  return (
    url !== undefined &&
    url !== '/openapi.json' &&
    url !== '/openapi.yaml' &&
    !url.startsWith('/docs') &&
    !url.startsWith('/admin/')
  );
}
