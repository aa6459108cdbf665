import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { idTimeRange } from '../database/id';
import { queryRows } from '../database/query-rows';

/** One email's tracked hits, opens and clicks counted together (email-tracking.service.ts). */
export interface EmailHits {
  emailId: string;
  opens: number;
  clicks: number;
  /** When the first open of the batch happened (ISO), null without opens. */
  openedAt: string | null;
  /** When the first click of the batch happened (ISO), null without clicks. */
  clickedAt: string | null;
}

/** An email whose first open or first click (or both) a batch of hits recorded. */
export interface FirstHit {
  emailId: string;
  projectId: string;
  contactId: string;
  toEmail: string;
  firstOpen: boolean;
  firstClick: boolean;
}

/** The statement that writes open and click hits onto the emails table. */
@Injectable()
export class EmailHitsRepository {
  /**
   * Counts the opens and clicks of several emails (one entry per email) in one
   * statement, and sets openedAt/clickedAt to each first hit's time once. The
   * rows are locked in id order first (FOR UPDATE), so concurrent writers (API
   * processes, RECORD_HIT jobs) cannot deadlock and exactly one of them sees a
   * timestamp still null. Answers only the emails whose first open or first
   * click this was (each gets its email.opened / email.clicked event): the
   * others are counted and need nothing more. Emails that no longer exist
   * (erased with their contact) are skipped. Both statements are bounded by
   * the ids' times (idTimeRange), so they read and lock the months from the
   * oldest id's to the newest's, not every month kept.
   */
  recordHits(manager: EntityManager, hits: EmailHits[]): Promise<FirstHit[]> {
    if (hits.length === 0) return Promise.resolve([]);
    return queryRows<FirstHit>(
      manager,
      `WITH h AS (SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::timestamptz[], $5::timestamptz[])
                    AS h(id, opens, clicks, opened_at, clicked_at)),
            p AS (SELECT e.id, e.created_at, e.opened_at, e.clicked_at FROM emails e JOIN h ON h.id = e.id
                   WHERE ${idTimeRange('e.created_at', '$1::uuid[]')}
                   ORDER BY e.id FOR UPDATE OF e),
            u AS (UPDATE emails e
                     SET opens = e.opens + h.opens, clicks = e.clicks + h.clicks,
                         opened_at = COALESCE(e.opened_at, h.opened_at), clicked_at = COALESCE(e.clicked_at, h.clicked_at)
                    FROM h JOIN p ON p.id = h.id
                   WHERE e.id = p.id AND e.created_at = p.created_at AND ${idTimeRange('e.created_at', '$1::uuid[]')}
               RETURNING e.id AS "emailId", e.project_id AS "projectId", e.contact_id AS "contactId", e.to_email AS "toEmail",
                         p.opened_at IS NULL AND h.opened_at IS NOT NULL AS "firstOpen",
                         p.clicked_at IS NULL AND h.clicked_at IS NOT NULL AS "firstClick")
       SELECT * FROM u WHERE "firstOpen" OR "firstClick"`,
      [
        hits.map((h) => h.emailId),
        hits.map((h) => h.opens),
        hits.map((h) => h.clicks),
        hits.map((h) => h.openedAt),
        hits.map((h) => h.clickedAt),
      ],
    );
  }
}
