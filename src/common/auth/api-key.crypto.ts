import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The two kinds of key: secret keys work everywhere, public keys only on POST /v1/track and POST /v1/subscribe. */
export enum ApiKeyType {
  SECRET = 'SECRET',
  PUBLIC = 'PUBLIC',
}

/** 24 random bytes = 192 bits after the prefix. */
const KEY_BYTES = 24;

export const KEY_PREFIX: Record<ApiKeyType, string> = {
  [ApiKeyType.SECRET]: 'sk_',
  [ApiKeyType.PUBLIC]: 'pk_',
};

export function generateApiKey(type: ApiKeyType): string {
  return KEY_PREFIX[type] + randomBytes(KEY_BYTES).toString('base64url');
}

/**
 * Keys carry 192 bits of entropy, so one SHA-256 pass is enough: there is
 * nothing to brute-force that a slow hash would protect.
 */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function keyTypeOf(key: string): ApiKeyType | null {
  if (key.startsWith('sk_')) return ApiKeyType.SECRET;
  if (key.startsWith('pk_')) return ApiKeyType.PUBLIC;
  return null;
}

/** A well-formed key: the prefix then base64url; anything else is refused before any lookup. */
/** The key of an `Authorization: Bearer <key>` header, or null when the header is not one. */
export function bearerKey(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? null;
}

/** The hash of a bearer header's key when it is well formed (what the key cache and table hold), else null. */
export function bearerKeyHash(header: string | undefined): Buffer | null {
  const key = bearerKey(header);
  return key !== null && isWellFormedKey(key) ? hashApiKey(key) : null;
}

export function isWellFormedKey(key: string): boolean {
  return /^(sk|pk)_[A-Za-z0-9_-]{16,128}$/.test(key);
}

export function displayPrefix(key: string): string {
  return key.slice(0, 8);
}
