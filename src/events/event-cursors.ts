import { ApiException } from '../common/errors/api-exception';
import { isUuid } from '../database/id';

/**
 * Cursors of the events lists. Events are ordered by (created_at, id), so the
 * cursor carries both: the time in microseconds (Postgres precision) as text,
 * never through a JS Date. Opaque base64url like the shared id cursor.
 */
export interface EventCursor {
  micros: string;
  id: string;
}

export interface NameCursor {
  micros: string;
  name: string;
}

function invalid(): ApiException {
  return ApiException.badRequest('The cursor is not valid; use nextCursor from a previous page', [
    { field: 'cursor', message: 'cursor does not decode', code: 'invalid_string' },
  ]);
}

const MIN_MICROS = -62_135_596_800_000_000n;
const MAX_MICROS = 253_402_300_799_999_999n;

function decodeParts(cursor: string, tag: string): string[] {
  const decoded = /^[A-Za-z0-9_-]+$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  const parts = decoded.split(':');
  if (parts.length !== 3 || parts[0] !== tag || !/^-?\d{1,19}$/.test(parts[1])) throw invalid();
  // Years 1 to 9999: a crafted time past what Postgres can add to the epoch must be a 400, not a 500.
  const micros = BigInt(parts[1]);
  if (micros < MIN_MICROS || micros > MAX_MICROS) throw invalid();
  return parts;
}

export function encodeEventCursor(c: EventCursor): string {
  return Buffer.from(`e1:${c.micros}:${c.id}`, 'utf8').toString('base64url');
}

export function decodeEventCursor(cursor: string): EventCursor {
  const [, micros, id] = decodeParts(cursor, 'e1');
  if (!isUuid(id)) throw invalid();
  return { micros, id };
}

export function encodeNameCursor(c: NameCursor): string {
  return Buffer.from(
    `n1:${c.micros}:${Buffer.from(c.name, 'utf8').toString('base64url')}`,
    'utf8',
  ).toString('base64url');
}

export function decodeNameCursor(cursor: string): NameCursor {
  const [, micros, encodedName] = decodeParts(cursor, 'n1');
  if (!/^[A-Za-z0-9_-]*$/.test(encodedName)) throw invalid();
  const name = Buffer.from(encodedName, 'base64url').toString('utf8');
  if (name.length === 0 || name.length > 100) throw invalid();
  return { micros, name };
}
