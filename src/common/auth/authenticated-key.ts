import type { ApiKeyType } from './api-key.crypto';

/** The result of resolving a bearer key: who is calling, with which kind of key. */
export interface AuthenticatedKey {
  keyId: string;
  keyType: ApiKeyType;
  project: { id: string; name: string; enabled: boolean };
  /** Set when the request was authenticated by a dashboard session cookie rather than a key. */
  session?: {
    /** The session's row id. */
    id: string;
    /** The cookie's value (never logged or stored): the CSRF token derives from it. */
    secret: string;
    expiresAt: Date;
  };
}
