import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../database/id';
import { preparedRows, queryRows } from '../database/query-rows';
import { InboundResult, InboundStatus } from './inbound-message.entity';

export interface StoredInbound {
  id: string;
  raw: Buffer;
  mailFrom: string;
  rcptTo: string[];
  status: InboundStatus;
}

/** A row of `inbound list`: everything but the raw bytes. */
export interface InboundSummary {
  id: string;
  receivedAt: Date;
  status: InboundStatus;
  mailFrom: string;
  rcptTo: string[];
  bytes: number;
  processedAt: Date | null;
  result: InboundResult | null;
}

/** Every statement on `inbound_messages`. */
@Injectable()
export class InboundMessagesRepository {
  /**
   * Several messages in one statement (the listener's group commit), so all
   * are committed when it returns; answers their ids in the given order.
   */
  async insertMany(
    manager: EntityManager,
    messages: Array<{ raw: Buffer; mailFrom: string; rcptTo: string[] }>,
  ): Promise<string[]> {
    const ids = messages.map(() => newId());
    await preparedRows(
      manager,
      `INSERT INTO inbound_messages (id, raw, mail_from, rcpt_to, status)
       SELECT m.id, m.raw, m.mail_from, ARRAY(SELECT jsonb_array_elements_text(m.rcpt_to)), 'RECEIVED'
         FROM unnest($1::uuid[], $2::bytea[], $3::text[], $4::jsonb[]) AS m(id, raw, mail_from, rcpt_to)`,
      [
        ids,
        messages.map((message) => message.raw),
        messages.map((message) => message.mailFrom),
        messages.map((message) => JSON.stringify(message.rcptTo)),
      ],
    );
    return ids;
  }

  /**
   * The messages of these ids that exist; `raw` is null for a message over
   * `maxBytes` (a batch leaves it to a run of its own).
   */
  async loadMany(
    manager: EntityManager,
    ids: string[],
    maxBytes: number,
  ): Promise<Array<Omit<StoredInbound, 'raw'> & { raw: Buffer | null }>> {
    return preparedRows(
      manager,
      `SELECT id, CASE WHEN octet_length(raw) <= $2::bigint THEN raw END AS raw,
              mail_from AS "mailFrom", rcpt_to AS "rcptTo", status
         FROM inbound_messages WHERE id = ANY($1::uuid[])`,
      [ids, maxBytes],
    );
  }

  /** Records the outcome of a message still RECEIVED; false when another run already did. */
  async finish(
    manager: EntityManager,
    id: string,
    status: InboundStatus,
    result: InboundResult,
  ): Promise<boolean> {
    return (await this.finishMany(manager, [{ id, status, result }])).has(id);
  }

  /** finish for several messages in one statement; answers the ids it finished. */
  async finishMany(
    manager: EntityManager,
    outcomes: Array<{ id: string; status: InboundStatus; result: InboundResult }>,
  ): Promise<Set<string>> {
    const rows = await preparedRows<{ id: string }>(
      manager,
      `UPDATE inbound_messages m SET status = o.status, result = o.result, processed_at = now()
         FROM unnest($1::uuid[], $2::varchar[], $3::jsonb[]) AS o(id, status, result)
        WHERE m.id = o.id AND m.status = 'RECEIVED' RETURNING m.id`,
      [
        outcomes.map((outcome) => outcome.id),
        outcomes.map((outcome) => outcome.status),
        outcomes.map((outcome) => JSON.stringify(outcome.result)),
      ],
    );
    return new Set(rows.map((row) => row.id));
  }

  /** Messages still RECEIVED, oldest first (the recovery re-adds their jobs). */
  async findReceived(manager: EntityManager, limit: number): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT id FROM inbound_messages WHERE status = 'RECEIVED'
        ORDER BY received_at, id LIMIT $1`,
      [limit],
    );
    return rows.map((row) => row.id);
  }

  /** Deletes up to `limit` messages processed before `before`; answers how many. */
  async deleteProcessedBefore(
    manager: EntityManager,
    before: Date,
    limit: number,
  ): Promise<number> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `DELETE FROM inbound_messages WHERE id IN (
         SELECT id FROM inbound_messages WHERE processed_at < $1 LIMIT $2
       ) RETURNING id`,
      [before, limit],
    );
    return rows.length;
  }

  /** Newest first, optionally of one status. */
  async list(
    manager: EntityManager,
    status: InboundStatus | null,
    limit: number,
  ): Promise<InboundSummary[]> {
    return queryRows<InboundSummary>(
      manager,
      `SELECT id, received_at AS "receivedAt", status, mail_from AS "mailFrom", rcpt_to AS "rcptTo",
              octet_length(raw) AS bytes, processed_at AS "processedAt", result
         FROM inbound_messages
        WHERE $1::varchar IS NULL OR status = $1
        ORDER BY received_at DESC, id DESC LIMIT $2`,
      [status, limit],
    );
  }
}
