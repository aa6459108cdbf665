import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { isUuid } from '../../database/id';
import { keysetRows } from '../../database/keyset-rows';
import { ApiException } from '../errors/api-exception';

/** Query parameters every list endpoint accepts; feature query DTOs extend it. */
export class PaginationQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  // Only plain decimal digits become a number: Number() would also take "1e2", "0x10" or " 5".
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value,
  )
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  @ApiPropertyOptional({ description: 'nextCursor of the previous page' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  hasMore: boolean;
  total: number;
  /** `total` is the planner's estimate (a large list past EXACT_TOTAL_CAP), not a count. */
  totalEstimated: boolean;
}

const CURSOR_VERSION = 'v1';

/** Cursors are opaque to clients: base64url of the last row's id (UUIDv7, so time-ordered). */
export function encodeCursor(lastId: string): string {
  return Buffer.from(`${CURSOR_VERSION}:${lastId}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const decoded = /^[A-Za-z0-9_-]+$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  const [version, id] = decoded.split(':');
  if (version !== CURSOR_VERSION || !id || !isUuid(id)) {
    throw ApiException.badRequest('The cursor is not valid; use nextCursor from a previous page', [
      { field: 'cursor', message: 'cursor does not decode', code: 'invalid_string' },
    ]);
  }
  return id;
}

/**
 * The one pagination routine: newest first by id, keyset on the cursor,
 * `total` counted under the same filters. `idColumn` is the qualified id
 * column (`c.id`). The query builder must already carry the filters.
 */
export async function paginate<E extends ObjectLiteral, T>(
  qb: SelectQueryBuilder<E>,
  idColumn: string,
  query: PaginationQueryDto,
  toItem: (row: E) => T,
): Promise<Page<T>> {
  const limit = query.limit ?? 20;
  const afterId = query.cursor ? decodeCursor(query.cursor) : null;
  const { rows, total, totalEstimated } = await keysetRows(qb, idColumn, afterId, limit);
  return pageOf(
    rows,
    limit,
    total,
    toItem,
    (row) => (row as unknown as { id: string }).id,
    totalEstimated,
  );
}

/**
 * Shapes fetched rows (limit + 1 of them) into the list envelope. `cursorOf`
 * encodes the last row of the page; lists ordered by something other than id
 * (events by time) bring their own cursor format.
 */
export function keysetPage<R, T>(
  rows: R[],
  limit: number,
  total: number,
  toItem: (row: R) => T,
  cursorOf: (last: R) => string,
  totalEstimated = false,
): Page<T> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  return {
    items: pageRows.map(toItem),
    nextCursor: hasMore ? cursorOf(pageRows[pageRows.length - 1]) : null,
    hasMore,
    total,
    totalEstimated,
  };
}

/** keysetPage for the usual id-ordered lists (the cursor is the last id); for raw-SQL lists too. */
export function pageOf<R, T>(
  rows: R[],
  limit: number,
  total: number,
  toItem: (row: R) => T,
  idOf: (row: R) => string,
  totalEstimated = false,
): Page<T> {
  return keysetPage(rows, limit, total, toItem, (last) => encodeCursor(idOf(last)), totalEstimated);
}
