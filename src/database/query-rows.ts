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
