import { Inject, Injectable } from '@nestjs/common';
import { ApiKeyType, hashApiKey, isWellFormedKey } from '../common/auth/api-key.crypto';
import { ApiKeyAuthenticator } from '../common/auth/api-key-authenticator';
import type { AuthenticatedKey } from '../common/auth/authenticated-key';
import {
  clearedSessionCookie,
  csrfTokenOf,
  sessionCookie,
  SessionCookieOptions,
} from '../common/auth/dashboard-session';
import { SessionAuthenticator } from '../common/auth/session-authenticator';
import { ApiException } from '../common/errors/api-exception';
import { RateLimitService } from '../common/rate-limit/rate-limit.service';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { SessionResponse } from './dto/session.response';

export interface SignedIn {
  session: SessionResponse;
  /** The Set-Cookie header value. */
  cookie: string;
}

/**
 * The dashboard's sign-in: a secret key exchanged for a server-side session whose cookie then
 * stands for the key (ApiKeyGuard). The key is checked like the guard checks a bearer key, and a
 * wrong one counts against the address's failed-auth budget the same way.
 */
@Injectable()
export class SessionService {
  private readonly cookieOptions: SessionCookieOptions;

  constructor(
    private readonly keys: ApiKeyAuthenticator,
    private readonly sessions: SessionAuthenticator,
    private readonly rateLimits: RateLimitService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.cookieOptions = { secure: config.publicUrl.startsWith('https:') };
  }

  async signIn(key: string, ip: string): Promise<SignedIn> {
    const keyHash = isWellFormedKey(key) ? hashApiKey(key) : null;
    const gate = await this.rateLimits.gate(ip, null);
    const found = keyHash ? await this.keys.authenticate(keyHash, gate.epoch) : null;
    // A public key is as good as none here: the dashboard acts with the secret key's rights.
    const auth = found?.keyType === ApiKeyType.SECRET ? found : null;
    if (gate.ipBlocked && !auth) {
      throw new ApiException(
        429,
        'RATE_LIMIT_EXCEEDED',
        'Too many failed authentication attempts from this address',
        { headers: { 'Retry-After': String(gate.ipBlocked.resetSeconds) } },
      );
    }
    if (!auth) {
      await this.rateLimits.recordAuthFailure(ip);
      throw new ApiException(401, 'INVALID_API_KEY', 'The API key is invalid or has been revoked', {
        suggestion: "Sign in with one of the project's secret keys (sk_…); public pk_ keys cannot.",
      });
    }
    if (!auth.project.enabled) {
      throw new ApiException(403, 'PROJECT_DISABLED', 'The project of this API key is disabled');
    }
    const started = await this.sessions.start(auth.keyId);
    return {
      session: {
        project: { id: auth.project.id, name: auth.project.name },
        csrfToken: started.csrfToken,
        expiresAt: started.expiresAt.toISOString(),
      },
      cookie: sessionCookie(started.sessionId, this.cookieOptions),
    };
  }

  describe(auth: AuthenticatedKey): SessionResponse {
    const session = requireSession(auth);
    return {
      project: { id: auth.project.id, name: auth.project.name },
      csrfToken: csrfTokenOf(session.secret),
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  /** Ends the session on the server; answers the Set-Cookie header that removes the cookie. */
  async signOut(auth: AuthenticatedKey): Promise<string> {
    await this.sessions.end(requireSession(auth).id);
    return clearedSessionCookie(this.cookieOptions);
  }
}

function requireSession(auth: AuthenticatedKey): NonNullable<AuthenticatedKey['session']> {
  if (!auth.session) {
    throw new ApiException(
      400,
      'BAD_REQUEST',
      'This request was made with an API key, not a dashboard session',
      { suggestion: 'Send the session cookie without an Authorization header.' },
    );
  }
  return auth.session;
}
