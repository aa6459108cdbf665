import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';

/**
 * Raw SQL through TypeORM: rows for every statement. (TypeORM's postgres driver
 * answers UPDATE/DELETE with `[rows, rowCount]` and everything else with rows.)
 */
export async function queryRows<T>(
  manager: EntityManager,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const result: unknown = await manager.query(text, params);
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  ) {
    return result[0] as T[];
  }
  return result as T[];
}

/**
 * The same as queryRows for a hot statement of constant text, as a named
 * prepared statement (the name derives from the text): parsed and planned
 * once per connection instead of on every call (for the webhook claim and
 * the email claim, planning took as long as executing). Inside a
 * transaction it runs on the transaction's connection. Only for a bounded
 * set of texts: each connection keeps every statement it prepared.
 */
export async function preparedRows<T>(
  manager: EntityManager,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const query = { name: statementName(text), text, values: params };
  const runner = manager.queryRunner;
  if (runner && !runner.isReleased) {
    const client = (await runner.connect()) as PgQueryable;
    return (await client.query(query)).rows as T[];
  }
  const pool = (manager.connection.driver as unknown as { master: PgQueryable }).master;
  return (await pool.query(query)).rows as T[];
}

const names = new Map<string, string>();

function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `mw_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
}

interface PgQueryable {
  query(query: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}
