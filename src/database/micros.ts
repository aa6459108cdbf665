/**
 * Timestamps in keyset cursors travel as microseconds since the epoch, exact
 * text both ways: a JS Date keeps milliseconds only, and a cursor rounded to
 * them would skip or repeat rows.
 */
export const microsOf = (column: string): string =>
  `(extract(epoch FROM ${column}) * 1000000)::bigint::text`;

export const timeOfMicros = (param: string): string =>
  `('epoch'::timestamptz + ${param}::bigint * interval '1 microsecond')`;
