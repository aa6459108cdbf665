/** Request body limits (contract: 10 MB on /v1/send, 1 MB elsewhere). */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Routes allowed a larger body, keyed by "METHOD /path" as Fastify registers them. */
export const ROUTE_BODY_LIMITS: Record<string, number> = {
  'POST /v1/send': 10 * 1024 * 1024,
  'POST /contacts/import': 10 * 1024 * 1024,
};

/**
 * The only route that takes an HTML form body (RFC 8058 one-click unsubscribe,
 * keyed as ROUTE_BODY_LIMITS). Everywhere else a form body is a wrong content
 * type (400), not a second way to send the fields.
 */
export const FORM_BODY_ROUTES: ReadonlySet<string> = new Set([
  'POST /unsubscribe/:token',
  'POST /admin/login',
]);
