/**
 * How many rows a list counts exactly for its `total`. Past it, the total is Postgres' planner
 * estimate, flagged `totalEstimated`: an exact count of a million-row project is a full scan on
 * every page (hundreds of ms), while counting up to the cap reads a bounded slice of an index.
 */
export const EXACT_TOTAL_CAP = 10_000;

/** A list's total: exact up to EXACT_TOTAL_CAP, else the planner's estimate (at least cap + 1). */
export interface ListTotal {
  total: number;
  estimated: boolean;
}

type Run = (sql: string, params: unknown[]) => Promise<unknown>;

interface PlanRow {
  'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }>;
}

/**
 * The total of `select` (a SELECT whose rows are the ones to count; its select list does not
 * matter), with `run` executing SQL on the list's connection. One bounded count; only when it
 * reaches the cap, an EXPLAIN (planning only, nothing is read).
 */
export async function cappedTotal(
  run: Run,
  select: string,
  params: unknown[],
  cap = EXACT_TOTAL_CAP,
): Promise<ListTotal> {
  const counted = (await run(
    `SELECT count(*)::int AS n FROM (${select} LIMIT ${cap + 1}) capped`,
    params,
  )) as Array<{ n: number }>;
  const n = counted[0].n;
  if (n <= cap) return { total: n, estimated: false };
  const plan = (await run(`EXPLAIN (FORMAT JSON) ${select}`, params)) as PlanRow[];
  const planned = Math.round(plan[0]['QUERY PLAN'][0].Plan['Plan Rows']);
  // The planner may guess below what was just counted; the total never says fewer than that.
  return { total: Math.max(planned, n), estimated: true };
}
