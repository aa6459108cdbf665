import { createHmac } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter as BullBoardFastifyAdapter } from '@bull-board/fastify';
import { getQueueToken } from '@nestjs/bullmq';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Queue } from 'bullmq';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken, tokenMatches } from '../common/metrics/metrics';
import { RateLimitService } from '../common/rate-limit/rate-limit.service';
import { DeliveryPacer, GroupRate } from '../delivery/delivery-pacer';
import { QUEUES } from '../queue/queue.constants';

export const DASHBOARD_PATH = '/admin/queues';
export const LOGIN_PATH = '/admin/login';
const COOKIE = 'mw_admin';
const SESSION_HOURS = 12;

/**
 * Bull Board at /admin/queues, only when ADMIN_TOKEN is set. Access: the
 * header `Authorization: Bearer <ADMIN_TOKEN>`, or a browser session from
 * the login form at /admin/login (a cookie holding an HMAC of the token and
 * its expiry under the token itself: HttpOnly, SameSite=Strict, path /admin;
 * the token is never stored in the browser). Comparisons are constant-time.
 */
export async function mountQueueDashboard(
  app: NestFastifyApplication,
  adminToken: string,
  secureCookies: boolean,
): Promise<void> {
  const pacer = app.get(DeliveryPacer, { strict: false });
  let rates: GroupRate[] = [];
  const queues = Object.values(QUEUES).map((name) => {
    const queue = app.get<Queue>(getQueueToken(name), { strict: false });
    return name === QUEUES.DELIVERY
      ? new DeliveryQueueAdapter(queue, () => describeRates(rates))
      : new BullMQAdapter(queue);
  });
  const serverAdapter = new BullBoardFastifyAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues,
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Mailwright queues' } },
  });

  const fastify = app.getHttpAdapter().getInstance();
  const rateLimits = app.get(RateLimitService);
  const allowed = (request: FastifyRequest): boolean =>
    tokenMatches(bearerToken(request.headers.authorization), adminToken) ||
    validSession(readCookie(request.headers.cookie, COOKIE), adminToken);
  // A wrong bearer token or login counts against the address; past the budget it waits, right token or not.
  const tooManyGuesses = async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    const over = await rateLimits.tokenGuessesOver(request.ip);
    if (!over) return false;
    const message = 'Too many wrong admin tokens from this address';
    void reply
      .code(429)
      .header('retry-after', String(over.resetSeconds))
      .header('content-type', 'application/json; charset=utf-8')
      .send({
        success: false,
        message,
        error: { code: 'RATE_LIMIT_EXCEEDED', message, statusCode: 429 },
      });
    return true;
  };

  await fastify.register(async (scope) => {
    scope.addHook('onRequest', async (request, reply) => {
      if (await tooManyGuesses(request, reply)) return reply;
      if (allowed(request)) {
        // The board's queue list carries the delivery queue's description: the group rates as they are now.
        if (request.url.startsWith(`${DASHBOARD_PATH}/api/queues`)) rates = await pacer.rates();
        return;
      }
      if (request.headers.authorization) await rateLimits.recordTokenGuess(request.ip);
      if ((request.headers.accept ?? '').includes('text/html'))
        return reply.redirect(LOGIN_PATH, 303);
      return reply
        .code(401)
        .header('content-type', 'application/json; charset=utf-8')
        .send({
          success: false,
          message: 'The queue dashboard needs ADMIN_TOKEN',
          error: {
            code: 'MISSING_API_KEY',
            message: 'The queue dashboard needs ADMIN_TOKEN',
            statusCode: 401,
            suggestion: 'Sign in at /admin/login or send Authorization: Bearer <ADMIN_TOKEN>.',
          },
        });
    });
    await scope.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
  });

  fastify.get(LOGIN_PATH, (_request, reply: FastifyReply) => sendLoginPage(reply, false));
  fastify.post(LOGIN_PATH, async (request, reply: FastifyReply) => {
    if (await tooManyGuesses(request, reply)) return reply;
    const token = (request.body as Record<string, unknown> | undefined)?.token;
    if (typeof token !== 'string' || !tokenMatches(token, adminToken)) {
      await rateLimits.recordTokenGuess(request.ip);
      return sendLoginPage(reply.code(401), true);
    }
    const expires = Date.now() + SESSION_HOURS * 3600_000;
    const cookie = [
      `${COOKIE}=${expires}.${sessionMac(adminToken, expires)}`,
      'Path=/admin',
      'HttpOnly',
      'SameSite=Strict',
      `Max-Age=${SESSION_HOURS * 3600}`,
      ...(secureCookies ? ['Secure'] : []),
    ].join('; ');
    return reply.code(303).header('set-cookie', cookie).header('location', DASHBOARD_PATH).send();
  });
}

/** The delivery queue in Bull Board, described by the current rate of each provider group. */
class DeliveryQueueAdapter extends BullMQAdapter {
  constructor(
    queue: Queue,
    private readonly describe: () => string,
  ) {
    super(queue);
  }

  override getDescription(): string {
    return this.describe();
  }
}

/** `Paced per mailbox provider (messages/s now of configured): google 10/10, …`. */
export function describeRates(rates: GroupRate[]): string {
  if (rates.length === 0) return 'Paced per mailbox provider';
  const round = (n: number): string => String(Math.round(n * 100) / 100);
  return `Paced per mailbox provider (messages/s now of configured): ${rates
    .map((r) => `${r.group} ${round(r.current)}/${round(r.configured)}`)
    .join(', ')}`;
}

function sessionMac(adminToken: string, expires: number): string {
  return createHmac('sha256', adminToken)
    .update(`mailwright-admin-session.${expires}`)
    .digest('base64url');
}

function validSession(value: string | undefined, adminToken: string): boolean {
  const match = value ? /^(\d{13})\.([A-Za-z0-9_-]{43})$/.exec(value) : null;
  if (!match) return false;
  const expires = Number(match[1]);
  return expires > Date.now() && tokenMatches(match[2], sessionMac(adminToken, expires));
}

function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

function sendLoginPage(reply: FastifyReply, failed: boolean): FastifyReply {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header(
      'content-security-policy',
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    )
    .send(
      `<!doctype html><html><head><meta charset="utf-8"><title>Mailwright queues</title>` +
        `<style>body{font:16px system-ui;margin:15vh auto;max-width:22rem}input,button{font:inherit;padding:.4rem;width:100%;box-sizing:border-box;margin:.3rem 0}</style></head>` +
        `<body><h1>Mailwright queues</h1>${failed ? '<p role="alert">That is not the admin token.</p>' : ''}` +
        `<form method="post" action="${LOGIN_PATH}"><label>Admin token <input type="password" name="token" autocomplete="current-password" required autofocus></label>` +
        `<button type="submit">Sign in</button></form></body></html>`,
    );
}
