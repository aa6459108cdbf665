import type { ApiKeyType } from './api-key.crypto';

/** The result of resolving a bearer key: who is calling, with which kind of key. */
export interface AuthenticatedKey {
  keyId: string;
  keyType: ApiKeyType;
  project: { id: string; name: string; enabled: boolean };
}
