import type { Client } from 'pg';

/**
 * The rows of each named query as one comparable value (row count and an md5
 * of the sorted rows): equal before and after a refused request means it
 * changed nothing.
 */
export async function tableFingerprint(
  db: Client,
  tables: Record<string, string>,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, sql] of Object.entries(tables)) {
    const result = await db.query<{ h: string; n: string }>(
      `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS h, count(*) AS n FROM (${sql}) t`,
    );
    out[name] = `${result.rows[0].n}:${result.rows[0].h}`;
  }
  return out;
}
