import { isPlainObject } from '../common/validation/json-text';

/** Contract: `data` is a JSON object of at most 64 KB. */
export const MAX_CONTACT_DATA_BYTES = 64 * 1024;

/**
 * How a `data` object changes a contact (top-level merge):
 * `set` holds the keys to write, `remove` the keys given as null.
 */
export interface DataPatch {
  set: Record<string, unknown>;
  remove: string[];
}

/** A key given as null is removed; any other value is written. */
function addToPatch(patch: DataPatch, key: string, value: unknown): void {
  if (value === null) patch.remove.push(key);
  else patch.set[key] = value;
}

/** PATCH /contacts and imports: every key is persisted, null removes it. */
export function toDataPatch(data: Record<string, unknown> | undefined): DataPatch {
  const patch: DataPatch = { set: {}, remove: [] };
  for (const [key, value] of Object.entries(data ?? {})) addToPatch(patch, key, value);
  return patch;
}

/**
 * Track and send: `{value, persistent}` wrappers (Plunk's convention) are
 * unwrapped; `persistent: false` keeps the value on the event only. Other
 * values are merged into the contact, null removing the key as in PATCH.
 */
export function toTrackedDataPatch(data: Record<string, unknown> | undefined): DataPatch {
  return toDataPatch(persistedValues(data));
}

/**
 * The part of track-style `data` that reaches the contact, as PATCH-style
 * data: wrappers unwrapped, `persistent: false` values left out.
 */
export function persistedValues(
  data: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const kept: [string, unknown][] = [];
  for (const [key, value] of Object.entries(data ?? {})) {
    if (!isPersistenceWrapper(value)) kept.push([key, value]);
    else if (value.persistent) kept.push([key, value.value]);
  }
  // fromEntries defines own properties: a key named "__proto__" stays a key.
  return Object.fromEntries(kept);
}

/** `{value, persistent: <boolean>}` and nothing else; the template renderer unwraps the same shape. */
export function isPersistenceWrapper(
  value: unknown,
): value is { value: unknown; persistent: boolean } {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return (
    keys.length === 2 &&
    keys.includes('value') &&
    keys.includes('persistent') &&
    typeof value.persistent === 'boolean'
  );
}
