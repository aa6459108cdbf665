import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';

export interface LabelledCount {
  labels: Record<string, string>;
  count: number;
}

/**
 * The read-only counts GET /metrics shows, across features' tables (the one
 * cross-aggregate reader, like the readiness probe: it changes nothing).
 * Each is one grouped count; MetricsService runs them at most every 15 s.
 */
@Injectable()
export class OperationsRepository {
  async emailsByStatusAndSource(manager: EntityManager): Promise<LabelledCount[]> {
    const rows = await queryRows<{ status: string; source: string; n: string }>(
      manager,
      'SELECT status, source, count(*) AS n FROM emails GROUP BY status, source',
    );
    return rows.map((r) => ({
      labels: { status: r.status, source: r.source },
      count: Number(r.n),
    }));
  }

  async webhookDeliveriesByStatus(manager: EntityManager): Promise<LabelledCount[]> {
    const rows = await queryRows<{ status: string; n: string }>(
      manager,
      'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status',
    );
    return rows.map((r) => ({ labels: { status: r.status }, count: Number(r.n) }));
  }

  async campaignsByStatus(manager: EntityManager): Promise<LabelledCount[]> {
    const rows = await queryRows<{ status: string; n: string }>(
      manager,
      'SELECT status, count(*) AS n FROM campaigns GROUP BY status',
    );
    return rows.map((r) => ({ labels: { status: r.status }, count: Number(r.n) }));
  }

  async workflowExecutionsByStatus(manager: EntityManager): Promise<LabelledCount[]> {
    const rows = await queryRows<{ status: string; n: string }>(
      manager,
      'SELECT status, count(*) AS n FROM workflow_executions GROUP BY status',
    );
    return rows.map((r) => ({ labels: { status: r.status }, count: Number(r.n) }));
  }
}
