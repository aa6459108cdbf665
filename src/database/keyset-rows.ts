import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { cappedTotal, type ListTotal } from './capped-count';

/**
 * The rows of one list page from a query builder that already carries the
 * filters: newest first by id (UUIDv7), keyset after `afterId`, limit + 1 rows
 * (the extra one tells pageOf there is more), and the total under the same
 * filters. The query-builder twin of a hand-written list such as
 * ContactsRepository.list; `idColumn` is qualified (`t.id`). With `capped`,
 * the total is exact up to EXACT_TOTAL_CAP and estimated past it (for lists
 * that grow to millions: the caller must pass `totalEstimated` on to pageOf).
 */
export async function keysetRows<E extends ObjectLiteral>(
  qb: SelectQueryBuilder<E>,
  idColumn: string,
  afterId: string | null,
  limit: number,
  options: { capped?: boolean } = {},
): Promise<{ rows: E[]; total: number; totalEstimated: boolean }> {
  const pageQb = qb.clone();
  if (afterId) pageQb.andWhere(`${idColumn} < :__afterId`, { __afterId: afterId });
  const [counted, rows] = await Promise.all([
    options.capped ? countCapped(qb) : exactCount(qb),
    pageQb
      .orderBy(idColumn, 'DESC')
      .take(limit + 1)
      .getMany(),
  ]);
  return { rows, total: counted.total, totalEstimated: counted.estimated };
}

async function exactCount(qb: SelectQueryBuilder<ObjectLiteral>): Promise<ListTotal> {
  return { total: await qb.clone().orderBy().getCount(), estimated: false };
}

function countCapped(qb: SelectQueryBuilder<ObjectLiteral>): Promise<ListTotal> {
  const [sql, params] = qb.clone().orderBy().select('1').getQueryAndParameters();
  return cappedTotal((text, values) => qb.connection.query(text, values), sql, params);
}
