import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { ApiException } from '../errors/api-exception';
import { RateLimitService, RateLimitState } from '../rate-limit/rate-limit.service';
import { ApiKeyType, hashApiKey, isWellFormedKey } from './api-key.crypto';
import { ApiKeyAuthenticator } from './api-key-authenticator';
import { AUTH_MODE_KEY, AuthenticatedRequest, AuthMode } from './auth.decorators';

/**
 * Global guard. Decisions in this order: a client IP over its failed-auth
 * budget gets 429 unless it sent a valid key; then the key (401); the project (403);
 * the route's key type (403); finally the per-project request budget (429).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly rateLimits: RateLimitService,
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
    const ip = request.ip;

    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    // Hashed once: both the cache and the table are keyed by the hash.
    const keyHash = match && isWellFormedKey(match[1]) ? hashApiKey(match[1]) : null;
    // One Redis round trip: this IP's failed-auth count, the auth epoch, and the
    // project's counter when this process already knows the key's project (a key
    // never changes project). Postgres is asked only when the key is not cached.
    const knownBudget = keyHash ? this.authenticator.knownBudgetOf(keyHash) : null;
    const gate = await this.rateLimits.gate(ip, knownBudget);
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
    if (!match) {
      await this.rateLimits.recordAuthFailure(ip);
      throw new ApiException(
        401,
        'MISSING_API_KEY',
        'Missing API key: send "Authorization: Bearer <key>"',
      );
    }
    if (!auth) {
      await this.rateLimits.recordAuthFailure(ip);
      throw new ApiException(401, 'INVALID_API_KEY', 'The API key is invalid or has been revoked');
    }
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

    const budget =
      gate.budget ??
      (await this.rateLimits.consumeProject({
        projectId: auth.project.id,
        publicKey: auth.keyType === ApiKeyType.PUBLIC,
      }));
    reply.header('RateLimit-Limit', String(budget.limit));
    reply.header('RateLimit-Remaining', String(budget.remaining));
    reply.header('RateLimit-Reset', String(budget.resetSeconds));
    if (!budget.allowed)
      throw tooManyRequests(reply, budget, 'Rate limit exceeded for this project');

    request.auth = auth;
    return true;
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
