import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../database/id';
import { queryRows } from '../database/query-rows';
import type { BounceReport } from './bounce-report';
import type { BounceReportOutcome } from './bounce-report.entity';

/** The statements of bounce_reports. */
@Injectable()
export class BounceReportsRepository {
  /**
   * Stores a report once: null when one with the same dedupe key exists (a
   * concurrent twin waits on the unique index until the first commits).
   */
  async insert(
    manager: EntityManager,
    report: BounceReport,
    emailId: string | null,
    projectId: string | null,
  ): Promise<string | null> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `INSERT INTO bounce_reports (id, project_id, email_id, kind, source, recipient, status, diagnostic,
                                   feedback_type, dedupe_key, outcome)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (dedupe_key) DO NOTHING
       RETURNING id`,
      [
        newId(),
        projectId,
        emailId,
        report.kind,
        report.source,
        report.recipient?.slice(0, 320) ?? null,
        report.status?.slice(0, 32) ?? null,
        report.diagnostic,
        report.feedbackType?.slice(0, 64) ?? null,
        report.dedupeKey.slice(0, 500),
        emailId ? 'applied' : 'unmatched',
      ],
    );
    return rows[0]?.id ?? null;
  }

  /**
   * insert for several reports in one statement (an inbound batch, dedupe
   * keys distinct): the ids of those stored, by report index; a report whose
   * key exists is absent.
   */
  async insertMany(
    manager: EntityManager,
    reports: Array<{ report: BounceReport; emailId: string | null; projectId: string | null }>,
  ): Promise<Map<number, string>> {
    const ids = reports.map(() => newId());
    const rows = await queryRows<{ id: string }>(
      manager,
      `INSERT INTO bounce_reports (id, project_id, email_id, kind, source, recipient, status, diagnostic,
                                   feedback_type, dedupe_key, outcome)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::varchar[], $5::varchar[], $6::varchar[],
                            $7::varchar[], $8::text[], $9::varchar[], $10::varchar[], $11::varchar[])
       ON CONFLICT (dedupe_key) DO NOTHING
       RETURNING id`,
      [
        ids,
        reports.map((r) => r.projectId),
        reports.map((r) => r.emailId),
        reports.map((r) => r.report.kind),
        reports.map((r) => r.report.source),
        reports.map((r) => r.report.recipient?.slice(0, 320) ?? null),
        reports.map((r) => r.report.status?.slice(0, 32) ?? null),
        reports.map((r) => r.report.diagnostic),
        reports.map((r) => r.report.feedbackType?.slice(0, 64) ?? null),
        reports.map((r) => r.report.dedupeKey.slice(0, 500)),
        reports.map((r) => (r.emailId ? 'applied' : 'unmatched')),
      ],
    );
    const stored = new Set(rows.map((row) => row.id));
    const byIndex = new Map<number, string>();
    ids.forEach((id, index) => {
      if (stored.has(id)) byIndex.set(index, id);
    });
    return byIndex;
  }

  async setOutcome(
    manager: EntityManager,
    id: string,
    outcome: BounceReportOutcome,
  ): Promise<void> {
    await queryRows(manager, 'UPDATE bounce_reports SET outcome = $2 WHERE id = $1', [id, outcome]);
  }
}
