import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify's genReqId: keep the caller's X-Request-Id when it is sane, else
 * make one. The id is also stored on the raw request so pino-http logs it.
 */
export function generateRequestId(raw: IncomingMessage): string {
  const given = raw.headers['x-request-id'];
  const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
  (raw as IncomingMessage & { id?: string }).id = id;
  return id;
}
