import { v7 as uuidv7, validate, version } from 'uuid';

/** Time-ordered UUIDv7: ids sort by creation, which the cursor pagination relies on. */
export function newId(): string {
  return uuidv7();
}

export function isUuid(value: string): boolean {
  return validate(value);
}

export function isUuidV7(value: string): boolean {
  return validate(value) && version(value) === 7;
}

/**
 * `AND`-able SQL bounding a row's created_at by its id's embedded time (migration IdTimeRange):
 * a lookup by id on the month-partitioned `emails` / `events` reads one or two partitions, not
 * every month kept. A non-v7 id gets an unbounded range, so no row is ever missed.
 */
export function idTimeRange(createdAt: string, id: string): string {
  return `${createdAt} >= mw_id_time_lo(${id}) AND ${createdAt} < mw_id_time_hi(${id})`;
}
