import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiKeyType } from './api-key.crypto';
import type { AuthenticatedKey } from './authenticated-key';
import type { RefusalMarks } from '../rate-limit/recent-refusals';

export const AUTH_MODE_KEY = 'mailwright:auth-mode';
export type AuthMode = 'secret' | 'public-allowed' | 'none';

/** The route needs no key at all (health, docs, unsubscribe, tracking links). */
export const NoApiKey = () => SetMetadata(AUTH_MODE_KEY, 'none' satisfies AuthMode);

/** The route accepts a public `pk_` key as well as a secret one (POST /v1/track, POST /v1/subscribe). */
export const AllowPublicKey = () => SetMetadata(AUTH_MODE_KEY, 'public-allowed' satisfies AuthMode);

/** The project of the calling key, as resolved by the API-key guard. */
export interface CurrentProjectInfo {
  id: string;
  name: string;
  /** The call was made with a public pk_ key (only on routes that allow one). */
  publicKey: boolean;
}

export type AuthenticatedRequest = FastifyRequest & { auth?: AuthenticatedKey } & RefusalMarks;

export const CurrentProject = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): CurrentProjectInfo => {
    const request = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
    if (!request.auth) {
      // A route without a key asked for a project: a programming error, not a client one.
      throw new Error('CurrentProject used on a route that is not authenticated');
    }
    return {
      id: request.auth.project.id,
      name: request.auth.project.name,
      publicKey: request.auth.keyType === ApiKeyType.PUBLIC,
    };
  },
);
