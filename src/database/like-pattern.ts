/**
 * A LIKE/ILIKE pattern matching `value` anywhere: its own `%`, `_` and `\`
 * are escaped (backslash is Postgres's default LIKE escape), so a search for
 * "50%" finds "50%" and not every name starting with "50".
 */
export function containsPattern(value: string): string {
  return `%${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
