import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';

/** Every statement on `opt_in_confirmations`. */
@Injectable()
export class OptInRepository {
  /**
   * Claims the right to send the contact a confirmation: true when none was
   * sent in the last `quietSeconds` (the row then says one is sent now). One
   * statement, so of concurrent requests exactly one wins. The time is in
   * milliseconds, as the confirmation token carries it.
   */
  async claimSend(
    manager: EntityManager,
    projectId: string,
    contactId: string,
    quietSeconds: number,
  ): Promise<Date | null> {
    const rows = await queryRows<{ sentAt: Date }>(
      manager,
      `INSERT INTO opt_in_confirmations AS c (contact_id, project_id, sent_at)
         VALUES ($1, $2, date_trunc('milliseconds', now()))
       ON CONFLICT (contact_id) DO UPDATE SET sent_at = EXCLUDED.sent_at
         WHERE c.sent_at <= now() - make_interval(secs => $3)
       RETURNING c.sent_at AS "sentAt"`,
      [contactId, projectId, quietSeconds],
    );
    return rows[0]?.sentAt ?? null;
  }

  /** Gives a claim back (its email could not be written), so the next request may send one. */
  async releaseSend(manager: EntityManager, contactId: string, sentAt: Date): Promise<void> {
    await manager.query(
      `UPDATE opt_in_confirmations SET sent_at = '-infinity'
        WHERE contact_id = $1 AND sent_at = $2`,
      [contactId, sentAt],
    );
  }

  /**
   * Records a confirmation by a link issued at `issuedAt`: true when that link
   * was not used before (no confirmation since it was issued) and the contact
   * has not unsubscribed or complained since (an old unused link must not undo
   * a later opt-out). Locks the row until commit, so the contact it names
   * cannot be erased meanwhile.
   */
  async markConfirmed(
    manager: EntityManager,
    projectId: string,
    contactId: string,
    issuedAt: Date,
  ): Promise<boolean> {
    const rows = await queryRows<{ contactId: string }>(
      manager,
      `UPDATE opt_in_confirmations SET confirmed_at = now()
        WHERE contact_id = $1 AND project_id = $2
          AND (confirmed_at IS NULL OR confirmed_at < $3)
          AND NOT EXISTS (SELECT 1 FROM events e
                           WHERE e.contact_id = $1 AND e.created_at > $3
                             AND e.name IN ('contact.unsubscribed', 'email.complained'))
        RETURNING contact_id AS "contactId"`,
      [contactId, projectId, issuedAt],
    );
    return rows.length > 0;
  }
}
