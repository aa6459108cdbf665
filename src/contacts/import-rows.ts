import { parse } from 'csv-parse/sync';
import type { FieldError } from '../common/errors/api-exception';
import { isValidEmail, normalizeEmail } from '../common/validation/email';
import {
  findJsonTextProblem,
  isPlainObject,
  jsonByteSize,
  RESERVED_KEYS,
} from '../common/validation/json-text';
import type { BulkContactInput } from './contacts.repository';
import type { ImportRowError } from './contact-import.entity';
import { MAX_CONTACT_DATA_BYTES, toDataPatch } from './contact-data';

/** JSON imports: `{contacts:[...]}` with at most this many rows. */
export const MAX_JSON_IMPORT_ROWS = 10_000;

/** Per-row errors kept on the import; `failed` counts them all. */
export const MAX_REPORTED_ERRORS = 1_000;

/**
 * A row as stored in contact_import_chunks: its position (`r`, 1-based), the
 * CSV line it starts on (`l`) and the value as received (`v`), validated by
 * the worker so a bad row is reported without failing the others.
 */
export interface RawImportRow {
  r: number;
  l?: number;
  v: unknown;
}

export class ImportBodyError extends Error {
  constructor(
    readonly status: 400 | 422,
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
  }
}

/** Checks the envelope of a JSON import; row contents are the worker's job. */
export function rowsFromJson(body: unknown): RawImportRow[] {
  if (!isPlainObject(body))
    throw new ImportBodyError(400, 'The request body must be a JSON object or a CSV file');
  const unknown = Object.keys(body).filter((key) => key !== 'contacts');
  if (unknown.length > 0) {
    throw new ImportBodyError(
      422,
      'Validation failed',
      unknown.map((key) => ({
        field: key,
        message: `Unrecognized key "${key}"`,
        code: 'unrecognized_keys' as const,
      })),
    );
  }
  const contacts = body.contacts;
  if (contacts === undefined || contacts === null) {
    throw new ImportBodyError(422, 'Validation failed', [
      { field: 'contacts', message: 'contacts is required', code: 'required' },
    ]);
  }
  if (!Array.isArray(contacts)) {
    throw new ImportBodyError(422, 'Validation failed', [
      { field: 'contacts', message: 'contacts must be an array', code: 'invalid_type' },
    ]);
  }
  if (contacts.length === 0) {
    throw new ImportBodyError(422, 'Validation failed', [
      { field: 'contacts', message: 'contacts must contain at least 1 row', code: 'too_small' },
    ]);
  }
  if (contacts.length > MAX_JSON_IMPORT_ROWS) {
    throw new ImportBodyError(422, 'Validation failed', [
      {
        field: 'contacts',
        message: `contacts must contain at most ${MAX_JSON_IMPORT_ROWS} rows (send larger lists as several imports or as CSV)`,
        code: 'too_big',
      },
    ]);
  }
  // Rows are stored as received until the worker validates them: they must be storable.
  const problem = findJsonTextProblem(contacts, 'contacts');
  if (problem) throw new ImportBodyError(422, 'Validation failed', [problem]);
  return contacts.map((v, i) => ({ r: i + 1, v }));
}

const TRUE_VALUES = new Set(['true', '1', 'yes', 'y']);
const FALSE_VALUES = new Set(['false', '0', 'no', 'n']);

/**
 * CSV imports: a header row with an `email` column (any case); a `subscribed`
 * column, when present, sets the subscription; every other non-empty cell
 * goes into `data` under its header name. Empty cells are left out so they do
 * not erase what a contact already has.
 */
export function rowsFromCsv(text: string): RawImportRow[] {
  const nul = text.indexOf('\u0000');
  if (nul >= 0) {
    const line = text.slice(0, nul).split(/\r\n|\n|\r/).length;
    throw new ImportBodyError(422, 'Validation failed', [
      { field: 'csv', message: `line ${line} contains a NUL character`, code: 'invalid_string' },
    ]);
  }
  const records = text.includes('"') ? parseQuotedCsv(text) : splitPlainCsv(text);
  if (records.length === 0) {
    throw new ImportBodyError(422, 'Validation failed', [
      {
        field: 'email',
        message: 'The CSV is empty; expected a header row with an email column',
        code: 'required',
      },
    ]);
  }
  const header = records[0].record.map((name) => name.trim());
  const emailIndex = header.findIndex((name) => name.toLowerCase() === 'email');
  if (emailIndex < 0) {
    throw new ImportBodyError(422, 'Validation failed', [
      { field: 'email', message: 'The CSV header has no "email" column', code: 'required' },
    ]);
  }
  const reserved = header.find((name) => RESERVED_KEYS.has(name));
  if (reserved !== undefined) {
    throw new ImportBodyError(422, 'Validation failed', [
      {
        field: reserved,
        message: `the column name "${reserved}" is reserved and not accepted`,
        code: 'invalid_string',
      },
    ]);
  }
  const subscribedIndex = header.findIndex((name) => name.toLowerCase() === 'subscribed');
  if (records.length === 1) {
    throw new ImportBodyError(422, 'Validation failed', [
      { field: 'contacts', message: 'The CSV has a header but no rows', code: 'too_small' },
    ]);
  }
  return records.slice(1).map(({ info, record }, i) => {
    const data: Record<string, string> = {};
    record.forEach((cell, column) => {
      if (column === emailIndex || column === subscribedIndex) return;
      const name = header[column];
      if (name && cell !== '') data[name] = cell;
    });
    const value: Record<string, unknown> = { email: record[emailIndex] ?? '', data };
    const subscribed =
      subscribedIndex >= 0 ? (record[subscribedIndex] ?? '').trim().toLowerCase() : '';
    if (subscribed !== '') {
      value.subscribed = TRUE_VALUES.has(subscribed)
        ? true
        : FALSE_VALUES.has(subscribed)
          ? false
          : subscribed;
    }
    return { r: i + 1, l: info.lines, v: value };
  });
}

interface CsvRecord {
  info: { lines: number };
  record: string[];
}

/** The general case (quoted fields, embedded commas and newlines): csv-parse, with line numbers. */
function parseQuotedCsv(text: string): CsvRecord[] {
  try {
    return parse(text, {
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as CsvRecord[];
  } catch (error) {
    throw new ImportBodyError(400, `The CSV could not be parsed: ${(error as Error).message}`);
  }
}

/**
 * A CSV without a single double quote has no quoting, so every non-empty line
 * is one record and every comma a separator: the same result as csv-parse,
 * several times faster on large files (the common export format).
 */
function splitPlainCsv(text: string): CsvRecord[] {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const records: CsvRecord[] = [];
  const lines = body.split(/\r\n|\n|\r/);
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '') records.push({ info: { lines: i + 1 }, record: lines[i].split(',') });
  }
  return records;
}

export type ValidatedRow =
  { ok: true; input: BulkContactInput } | { ok: false; error: ImportRowError };

/** One row's rules, the same as POST /contacts (email, subscribed, data ≤ 64 KB). */
export function validateImportRow(raw: RawImportRow): ValidatedRow {
  const fail = (
    email: string | null,
    field: string,
    code: string,
    message: string,
  ): ValidatedRow => ({
    ok: false,
    error: {
      row: raw.r,
      ...(raw.l !== undefined ? { line: raw.l } : {}),
      email,
      field,
      code,
      message,
    },
  });
  const v = raw.v;
  if (!isPlainObject(v))
    return fail(null, '', 'invalid_type', 'The row must be an object {email, subscribed?, data?}');
  const emailValue = typeof v.email === 'string' ? v.email : null;
  const unknown = Object.keys(v).find(
    (key) => key !== 'email' && key !== 'subscribed' && key !== 'data',
  );
  if (unknown)
    return fail(emailValue, unknown, 'unrecognized_keys', `Unrecognized key "${unknown}"`);
  if (v.email === undefined || v.email === null || v.email === '')
    return fail(null, 'email', 'required', 'email is required');
  if (typeof v.email !== 'string')
    return fail(null, 'email', 'invalid_type', 'email must be a string');
  const email = normalizeEmail(v.email);
  if (!isValidEmail(email))
    return fail(v.email, 'email', 'invalid_string', 'email must be a valid email address');
  if (v.subscribed !== undefined && typeof v.subscribed !== 'boolean') {
    return fail(email, 'subscribed', 'invalid_type', 'subscribed must be a boolean');
  }
  if (v.data !== undefined && !isPlainObject(v.data))
    return fail(email, 'data', 'invalid_type', 'data must be a JSON object');
  if (v.data !== undefined && jsonByteSize(v.data) > MAX_CONTACT_DATA_BYTES) {
    return fail(email, 'data', 'too_big', 'data must be at most 64 KB as JSON');
  }
  const patch = toDataPatch(v.data as Record<string, unknown> | undefined);
  return {
    ok: true,
    input: {
      email,
      subscribed: (v.subscribed as boolean | undefined) ?? null,
      set: patch.set,
      remove: patch.remove,
    },
  };
}

/**
 * Folds rows with the same email into one (a later row wins key by key), so a
 * multi-row upsert never touches a row twice.
 */
export function mergeDuplicates(inputs: BulkContactInput[]): BulkContactInput[] {
  const byEmail = new Map<string, BulkContactInput>();
  for (const input of inputs) {
    const previous = byEmail.get(input.email);
    if (!previous) {
      byEmail.set(input.email, { ...input, set: { ...input.set }, remove: [...input.remove] });
      continue;
    }
    for (const key of input.remove) delete previous.set[key];
    for (const key of Object.keys(input.set))
      previous.remove = previous.remove.filter((k) => k !== key);
    previous.set = { ...previous.set, ...input.set };
    previous.remove = [...new Set([...previous.remove, ...input.remove])];
    if (input.subscribed !== null) previous.subscribed = input.subscribed;
  }
  return [...byEmail.values()];
}
