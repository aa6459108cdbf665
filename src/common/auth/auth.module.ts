import { Module } from '@nestjs/common';
import { ApiKeyAuthenticator } from './api-key-authenticator';
import { ApiKeyCache } from './api-key-cache';
import { ApiKeyLookupRepository } from './api-key-lookup.repository';

/**
 * Key resolution and its cache: the guard authenticates with it, project
 * administration (ProjectsService) invalidates it after a change.
 */
@Module({
  providers: [ApiKeyCache, ApiKeyAuthenticator, ApiKeyLookupRepository],
  exports: [ApiKeyCache, ApiKeyAuthenticator],
})
export class AuthModule {}
