import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { PROVIDER_GROUPS } from '../../config/config';

/** Injection token of the application's prom-client Registry (one per app instance). */
export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');

/**
 * The metrics every part of the process may count into, and the registry
 * GET /metrics renders. One per application instance (tests boot several in
 * one process), with the default process metrics (`mailwright_process_*`,
 * `mailwright_nodejs_*`).
 */
export class AppMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  /** SMTP errors by class: transient (retried), permanent (bounced), failed (attempts used up). */
  readonly smtpErrors: Counter<'class'>;
  /** email.* events as they are published: deliveries per second is rate(…{event="email.sent"}). */
  readonly emailEvents: Counter<'event'>;
  /** SMTP deferrals (421, 451, 4.7.x) by mailbox provider group: each slows that group's pacing. */
  readonly deliveryDeferrals: Counter<'group'>;
  /** 429s repeated to a key still refused, answered before routing (recent-refusals.ts). */
  readonly earlyRefusals: Counter;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'mailwright_' });
    this.httpDuration = new Histogram({
      name: 'mailwright_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status, with their latency',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    this.smtpErrors = new Counter({
      name: 'mailwright_smtp_errors_total',
      help: 'SMTP delivery errors by class: transient (retried), permanent (bounced), exhausted (FAILED after the last attempt)',
      labelNames: ['class'],
      registers: [this.registry],
    });
    this.emailEvents = new Counter({
      name: 'mailwright_email_events_total',
      help: 'email.* events recorded by this process (email.sent: messages accepted by the SMTP server)',
      labelNames: ['event'],
      registers: [this.registry],
    });
    this.deliveryDeferrals = new Counter({
      name: 'mailwright_delivery_deferrals_total',
      help: 'SMTP deferrals (421, 451 or 4.7.x) received by this process, by mailbox provider group',
      labelNames: ['group'],
      registers: [this.registry],
    });
    for (const group of PROVIDER_GROUPS) this.deliveryDeferrals.inc({ group }, 0);
    this.earlyRefusals = new Counter({
      name: 'mailwright_http_early_refusals_total',
      help: '429s repeated to a key refused moments before, answered before routing (also in mailwright_http_request_duration_seconds, route "*" when every route of the key is refused)',
      registers: [this.registry],
    });
  }

  /** A repeated refusal answered before routing (no onResponse hook sees it). */
  observeEarlyRefusal(method: string, route: string, seconds: number): void {
    this.earlyRefusals.inc();
    this.httpDuration.observe({ method, route, status: '429' }, seconds);
  }

  /**
   * Times every request by its route template (`/contacts/:id`, never the
   * raw URL with ids or tokens); requests that match no route are `unmatched`.
   */
  instrument(fastify: FastifyInstance): void {
    fastify.addHook('onResponse', (request, reply, done) => {
      this.httpDuration.observe(
        {
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status: String(reply.statusCode),
        },
        reply.elapsedTime / 1000,
      );
      done();
    });
  }
}

/** Constant-time comparison of a presented bearer token with the configured one. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (!presented) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  return match?.[1];
}
