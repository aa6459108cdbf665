import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { setApiRequestProject } from '../../database/statement-timeout';
import { ApiException } from '../errors/api-exception';
import { AuthGate, RateLimitService, RateLimitState } from '../rate-limit/rate-limit.service';
import { ApiKeyType, bearerKey, bearerKeyHash } from './api-key.crypto';
import { ApiKeyAuthenticator } from './api-key-authenticator';
import { AUTH_MODE_KEY, AuthenticatedRequest, AuthMode } from './auth.decorators';
import type { AuthenticatedKey } from './authenticated-key';
import { clearedSessionCookie, csrfTokenMatches, readSessionCookie } from './dashboard-session';
import { SessionAuthenticator } from './session-authenticator';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
export const CSRF_HEADER = 'x-csrf-token';

interface Authenticated {
  auth: AuthenticatedKey;
  gate: AuthGate;
  /** The bearer key's hash (none for a session): a 429 for it is remembered (recent-refusals.ts). */
  keyHash?: Buffer;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Global guard. Decisions in this order: a client IP over its failed-auth
 * budget gets 429 unless it sent a valid key; then the key (401); the project (403);
 * the route's key type (403); a session's CSRF token (403); finally the per-project
 * request budget (429). Without an Authorization header, the dashboard's session
 * cookie stands for the secret key that signed in.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly rateLimits: RateLimitService,
    private readonly sessions: SessionAuthenticator,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const mode =
      this.reflector.getAllAndOverride<AuthMode>(AUTH_MODE_KEY, [
        context.getHandler(),
        context.getClass(),
      ]) ?? 'secret';
    if (mode === 'none') return true;

    const http = context.switchToHttp();
    const request = http.getRequest<AuthenticatedRequest>();
    const reply = http.getResponse<FastifyReply>();

    const header = request.headers.authorization;
    // A request with an Authorization header uses the key, whatever cookie it carries.
    const sessionId = header === undefined ? readSessionCookie(request.headers.cookie) : undefined;
    const { auth, gate, keyHash } =
      sessionId !== undefined
        ? await this.authenticateSession(request, reply, sessionId)
        : await this.authenticateKey(request, reply, header);
    request.refusalKeyHash = keyHash;
    if (!auth.project.enabled) {
      throw new ApiException(403, 'PROJECT_DISABLED', 'The project of this API key is disabled');
    }
    if (auth.keyType === ApiKeyType.PUBLIC && mode !== 'public-allowed') {
      throw new ApiException(
        403,
        'FORBIDDEN',
        'A public key may only be used on POST /v1/track and POST /v1/subscribe',
      );
    }
    // A cookie rides along with any request the browser makes; a header another origin cannot
    // read (GET /session) cannot be forged by it.
    if (
      auth.session &&
      !SAFE_METHODS.has(request.method) &&
      !csrfTokenMatches(headerValue(request.headers[CSRF_HEADER]), auth.session.secret)
    ) {
      throw new ApiException(
        403,
        'FORBIDDEN',
        'A change made with the dashboard session needs the X-CSRF-Token header given by GET /session',
      );
    }

    const budget =
      gate.budget ??
      (await this.rateLimits.consumeProject({
        projectId: auth.project.id,
        publicKey: auth.keyType === ApiKeyType.PUBLIC,
      }));
    reply.header('RateLimit-Limit', String(budget.limit));
    reply.header('RateLimit-Remaining', String(budget.remaining));
    reply.header('RateLimit-Reset', String(budget.resetSeconds));
    if (!budget.allowed) {
      request.refusalScope = 'project';
      throw tooManyRequests(reply, budget, 'Rate limit exceeded for this project');
    }

    request.auth = auth;
    // Work of this request that has no project argument (a body's parse check) is charged to it.
    setApiRequestProject(auth.project.id);
    return true;
  }

  /** The bearer key: 429 for an address over its failed-auth budget without a valid key, else 401. */
  private async authenticateKey(
    request: AuthenticatedRequest,
    reply: FastifyReply,
    header: string | undefined,
  ): Promise<Authenticated> {
    // Hashed once: both the cache and the table are keyed by the hash.
    const keyHash = bearerKeyHash(header);
    // One Redis round trip: this IP's failed-auth count, the auth epoch, and the
    // project's counter when this process already knows the key's project (a key
    // never changes project). Postgres is asked only when the key is not cached.
    const knownBudget = keyHash ? this.authenticator.knownBudgetOf(keyHash) : null;
    const gate = await this.rateLimits.gate(request.ip, knownBudget);
    const auth = keyHash ? await this.authenticator.authenticate(keyHash, gate.epoch) : null;
    // An address over its failed-auth budget learns nothing about a wrong key, but a valid key is
    // never refused for it: behind a shared proxy address, others' failures must not lock a tenant out.
    if (gate.ipBlocked && !auth) {
      throw tooManyRequests(
        reply,
        gate.ipBlocked,
        'Too many failed authentication attempts from this address',
      );
    }
    if (bearerKey(header) === null) {
      await this.rateLimits.recordAuthFailure(request.ip);
      throw new ApiException(
        401,
        'MISSING_API_KEY',
        'Missing API key: send "Authorization: Bearer <key>"',
      );
    }
    if (!auth) {
      await this.rateLimits.recordAuthFailure(request.ip);
      throw new ApiException(401, 'INVALID_API_KEY', 'The API key is invalid or has been revoked');
    }
    return { auth, gate, keyHash: keyHash ?? undefined };
  }

  /** The dashboard session cookie: counted and limited like a wrong key when it names no live session. */
  private async authenticateSession(
    request: AuthenticatedRequest,
    reply: FastifyReply,
    sessionId: string,
  ): Promise<Authenticated> {
    const [gate, auth] = await Promise.all([
      this.rateLimits.gate(request.ip, null),
      this.sessions.resolve(sessionId),
    ]);
    if (gate.ipBlocked && !auth) {
      throw tooManyRequests(
        reply,
        gate.ipBlocked,
        'Too many failed authentication attempts from this address',
      );
    }
    if (!auth) {
      await this.rateLimits.recordAuthFailure(request.ip);
      // The browser drops a cookie that names no session, so the app shows sign-in, not a loop of 401s.
      reply.header(
        'set-cookie',
        clearedSessionCookie({ secure: this.config.publicUrl.startsWith('https:') }),
      );
      throw new ApiException(
        401,
        'INVALID_API_KEY',
        'The dashboard session has ended or its key was revoked: sign in again',
      );
    }
    return { auth, gate };
  }
}

function tooManyRequests(
  reply: FastifyReply,
  state: RateLimitState,
  message: string,
): ApiException {
  reply.header('Retry-After', String(state.resetSeconds));
  return new ApiException(429, 'RATE_LIMIT_EXCEEDED', message);
}
