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
  /** One statement, so committed when it returns (the listener answers 250 after it). */
  async insert(
    manager: EntityManager,
    message: { raw: Buffer; mailFrom: string; rcptTo: string[] },
  ): Promise<string> {
    const id = newId();
    await preparedRows(
      manager,
      `INSERT INTO inbound_messages (id, raw, mail_from, rcpt_to, status)
       VALUES ($1, $2, $3, $4::text[], 'RECEIVED')`,
      [id, message.raw, message.mailFrom, message.rcptTo],
    );
    return id;
  }

  async load(manager: EntityManager, id: string): Promise<StoredInbound | null> {
    const rows = await preparedRows<StoredInbound>(
      manager,
      `SELECT id, raw, mail_from AS "mailFrom", rcpt_to AS "rcptTo", status
         FROM inbound_messages WHERE id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** Records the outcome of a message still RECEIVED; false when another run already did. */
  async finish(
    manager: EntityManager,
    id: string,
    status: InboundStatus,
    result: InboundResult,
  ): Promise<boolean> {
    const rows = await preparedRows<{ id: string }>(
      manager,
      `UPDATE inbound_messages SET status = $2, result = $3::jsonb, processed_at = now()
        WHERE id = $1 AND status = 'RECEIVED' RETURNING id`,
      [id, status, JSON.stringify(result)],
    );
    return rows.length > 0;
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
