import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/**
 * The rows of one list page from a query builder that already carries the
 * filters: newest first by id (UUIDv7), keyset after `afterId`, limit + 1 rows
 * (the extra one tells pageOf there is more), and the exact total under the
 * same filters. The query-builder twin of a hand-written list such as
 * ContactsRepository.list; `idColumn` is qualified (`t.id`).
 */
export async function keysetRows<E extends ObjectLiteral>(
  qb: SelectQueryBuilder<E>,
  idColumn: string,
  afterId: string | null,
  limit: number,
): Promise<{ rows: E[]; total: number }> {
  const total = await qb.clone().orderBy().getCount();
  const pageQb = qb.clone();
  if (afterId) pageQb.andWhere(`${idColumn} < :__afterId`, { __afterId: afterId });
  const rows = await pageQb
    .orderBy(idColumn, 'DESC')
    .take(limit + 1)
    .getMany();
  return { rows, total };
}
