import type { FieldError } from '../errors/api-exception';

/**
 * Nesting allowed in a request body (the body itself is level 1). Deeper
 * JSON would make class-transformer and Postgres' jsonb parser recurse
 * without bound; nothing the API accepts needs more than a dozen levels.
 */
export const MAX_JSON_DEPTH = 32;

/** NUL, or a UTF-16 surrogate without its partner: text Postgres cannot store (text or jsonb). */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Size of a value serialised as JSON, in UTF-8 bytes (the unit of the `data` limits). */
export function jsonByteSize(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** A JSON object: not an array, not null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function hasUnstorableText(value: string): boolean {
  return UNSTORABLE.test(value);
}

/**
 * Keys the framework strips from bodies as prototype-pollution vectors (Nest's
 * ValidationPipe deletes `constructor` and `prototype`, Fastify's parser
 * refuses `__proto__`). Refusing them explicitly beats silently losing them.
 */
export const RESERVED_KEYS: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
]);

function joinPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

/**
 * The first problem of a parsed JSON value that no field rule would catch:
 * nesting deeper than MAX_JSON_DEPTH (reported on the top-level field that
 * holds it, code too_big) or a string or key Postgres cannot store
 * (reported with its full path, code invalid_string), or a reserved key
 * (RESERVED_KEYS, invalid_string). Iterative, so any
 * depth is safe to inspect. `prefix` is the path of `value` in the body.
 */
export function findJsonTextProblem(value: unknown, prefix = ''): FieldError | null {
  const stack: Array<{ value: unknown; path: string; depth: number; top: string }> = [
    { value, path: prefix, depth: 0, top: prefix },
  ];
  while (stack.length > 0) {
    const item = stack.pop() as { value: unknown; path: string; depth: number; top: string };
    const current = item.value;
    if (typeof current === 'string') {
      if (hasUnstorableText(current)) return unstorable(item.path);
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    const depth = item.depth + 1;
    if (depth > MAX_JSON_DEPTH) {
      return {
        field: item.top,
        message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels is not accepted`,
        code: 'too_big',
      };
    }
    if (Array.isArray(current)) {
      current.forEach((child, index) => {
        const path = joinPath(item.path, index);
        stack.push({ value: child, path, depth, top: item.top || path });
      });
      continue;
    }
    for (const [key, child] of Object.entries(current as Record<string, unknown>)) {
      const path = joinPath(item.path, key);
      if (hasUnstorableText(key)) return unstorable(path);
      if (RESERVED_KEYS.has(key)) {
        return {
          field: path,
          message: `the key "${key}" is reserved and not accepted`,
          code: 'invalid_string',
        };
      }
      stack.push({ value: child, path, depth, top: item.top || path });
    }
  }
  return null;
}

function unstorable(field: string): FieldError {
  return {
    field,
    message: 'must not contain NUL characters or unpaired UTF-16 surrogates',
    code: 'invalid_string',
  };
}
