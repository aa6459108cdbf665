/**
 * A value's own `%`, `_` and `\` escaped for LIKE/ILIKE (backslash is
 * Postgres's default LIKE escape), so a search for "50%" finds "50%" and not
 * every name starting with "50".
 */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A LIKE/ILIKE pattern matching `value` anywhere in the text. */
export function containsPattern(value: string): string {
  return `%${escapeLike(value)}%`;
}
