import { Module } from '@nestjs/common';
import { ApiKeyAuthenticator } from './api-key-authenticator';
import { ApiKeyCache } from './api-key-cache';

/**
 * Key resolution and its cache: the guard authenticates with it, project
 * administration (ProjectsService) invalidates it after a change.
 */
@Module({
  providers: [ApiKeyCache, ApiKeyAuthenticator],
  exports: [ApiKeyCache, ApiKeyAuthenticator],
})
export class AuthModule {}
