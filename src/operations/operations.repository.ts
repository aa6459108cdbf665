import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';

export interface LabelledCount {
  labels: Record<string, string>;
  count: number;
}

/** The tables GET /metrics counts by status (StatusCounter.family). */
export type CountedFamily = 'emails' | 'webhook_deliveries' | 'campaigns' | 'workflow_executions';

/**
 * The read-only counts GET /metrics shows, across features' tables (the one
 * cross-aggregate reader, like the readiness probe). They come from
 * `status_counters`, kept by triggers in the same transactions as the rows
 * they count: one read of a few hundred rows at most, whatever the size of
 * the tables counted.
 */
@Injectable()
export class OperationsRepository {
  async statusCounts(manager: EntityManager): Promise<Map<CountedFamily, LabelledCount[]>> {
    const rows = await queryRows<{
      family: CountedFamily;
      status: string;
      source: string;
      n: string;
    }>(
      manager,
      // A status no row has any more is left out, as a grouped count(*) leaves it out.
      `SELECT family, status, source, sum(n) AS n FROM status_counters GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
    );
    const out = new Map<CountedFamily, LabelledCount[]>();
    for (const family of [
      'emails',
      'webhook_deliveries',
      'campaigns',
      'workflow_executions',
    ] as const)
      out.set(family, []);
    for (const r of rows) {
      const labels: Record<string, string> =
        r.family === 'emails' ? { status: r.status, source: r.source } : { status: r.status };
      out.get(r.family)?.push({ labels, count: Number(r.n) });
    }
    return out;
  }

  /**
   * Folds the counter slots of backends that have gone into slot 0 (one
   * process at a time; a no-op while another runs it), so the rows read stay
   * bounded by the backends alive rather than by every connection ever opened.
   */
  async compactCounters(manager: EntityManager): Promise<void> {
    await manager.query('SELECT compact_counters()');
  }
}
