import { Module } from '@nestjs/common';
import { ApiKeyAuthenticator } from './api-key-authenticator';
import { ApiKeyCache } from './api-key-cache';
import { ApiKeyLookupRepository } from './api-key-lookup.repository';
import { DashboardSessionsRepository } from './dashboard-sessions.repository';
import { SessionAuthenticator } from './session-authenticator';

/**
 * Key resolution and its cache: the guard authenticates with it, project
 * administration (ProjectsService) invalidates it after a change. Dashboard
 * sessions (a cookie acting as a secret key) are resolved here too.
 */
@Module({
  providers: [
    ApiKeyCache,
    ApiKeyAuthenticator,
    ApiKeyLookupRepository,
    DashboardSessionsRepository,
    SessionAuthenticator,
  ],
  exports: [ApiKeyCache, ApiKeyAuthenticator, SessionAuthenticator],
})
export class AuthModule {}
