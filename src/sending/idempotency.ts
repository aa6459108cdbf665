import { createHash } from 'node:crypto';
import { ApiException } from '../common/errors/api-exception';

/** How long a key answers with its first response. */
export const IDEMPOTENCY_TTL_HOURS = 24;

/** What the service needs from the Idempotency-Key header. */
export interface IdempotencyRequest {
  key: string;
  requestHash: string;
}

/** 1..255 printable ASCII characters (space to tilde), as the contract says. */
export function parseIdempotencyKey(header: unknown): string | null {
  if (header === undefined) return null;
  const value = Array.isArray(header) ? header[0] : header;
  if (typeof value !== 'string' || !/^[\x20-\x7e]{1,255}$/.test(value)) {
    throw ApiException.badRequest('Idempotency-Key must be 1 to 255 printable ASCII characters', [
      {
        field: 'Idempotency-Key',
        message: 'must be 1 to 255 printable ASCII characters',
        code: 'invalid_string',
      },
    ]);
  }
  return value;
}

/** Key order does not matter: `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function requestHash(body: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(body ?? null))
    .digest('hex');
}

export function idempotencyKeyReused(): ApiException {
  return new ApiException(
    409,
    'IDEMPOTENCY_KEY_REUSED',
    'This Idempotency-Key was already used with a different request body',
  );
}
