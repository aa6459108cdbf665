import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { idTimeRange, newId } from '../database/id';
import { keysetRows } from '../database/keyset-rows';
import { preparedRows, queryRows } from '../database/query-rows';
import {
  SenderRead,
  SenderReadColumns,
  senderJoin,
  senderReadOf,
} from '../domains/domains.repository';
import type { EventRow } from '../events/event.row';
import { insertEventFrom, NewEvent } from '../events/events.repository';
import { Email, EmailAttachmentRef, EmailBounce, EmailStatus } from './email.entity';

/** An email row claimed for delivery (the claim itself decided whether it may go out). */
export interface ClaimedEmail {
  id: string;
  projectId: string;
  contactId: string;
  status: EmailStatus;
  toEmail: string;
  toName: string | null;
  fromEmail: string;
  fromName: string | null;
  replyTo: string | null;
  subject: string;
  /** null when the message is rendered at delivery from `contentId`. */
  html: string | null;
  text: string | null;
  contentId: string | null;
  marketing: boolean;
  headers: Record<string, string>;
  attachments: EmailAttachmentRef[];
  /** Attempts so far, this one included. */
  attempts: number;
  /** When the email was accepted: how long deferrals may go on without counting attempts. */
  queuedAt: Date;
  trackOpens: boolean;
  trackClicks: boolean;
  /** The contact as it is now, for a render at delivery (only when `contentId` is set). */
  contactSubscribed: boolean;
  contactData: Record<string, unknown> | null;
  /** The project's tracking domain when VERIFIED: the host of the message's links. */
  trackingDomain: string | null;
  /** The sender domain as the claim read it (for DomainsService.assertCanSend). */
  sender: SenderRead;
}

/** BulkEmailSpec with its priority, as insertBulk writes it. */
export interface BulkRowSpec {
  projectId: string;
  source: string;
  campaignId: string | null;
  contentId: string;
  subject: string;
  marketing: boolean;
  trackOpens: boolean;
  trackClicks: boolean;
  from: { email: string; name?: string | null };
  replyTo?: string | null;
  priority: number;
}

/** A campaign email waiting for its delivery job. */
export interface QueuedCampaignEmail {
  id: string;
  contactId: string;
  priority: number;
  status: EmailStatus;
}

/** What a final status writes besides the status itself. */
export interface FinishFields {
  messageId?: string;
  error?: string | null;
  /** SENT only: whether the message went out with a DKIM signature. */
  dkimSigned?: boolean;
  /** The subject as rendered at delivery (mail from shared content). */
  subject?: string;
  /** The envelope sender of the attempt that ended it (none when nothing was attempted). */
  returnPath?: string;
}

export interface EmailListFilter {
  status?: EmailStatus;
  contactId?: string;
  campaignId?: string;
  opened?: boolean;
  clicked?: boolean;
}

/** What an email that has just become final still holds: its event and its attachments. */
export interface FailedEmail {
  projectId: string;
  contactId: string;
  toEmail: string;
  attachments: EmailAttachmentRef[];
}

/** An open row the recovery sweep re-enqueues (what EmailsService.enqueue needs). */
export interface StaleEmail {
  id: string;
  priority: number;
  status: EmailStatus;
}

/** The email a bounce or complaint report names, as the policy needs it. */
export interface BouncedEmail {
  id: string;
  projectId: string;
  contactId: string;
  campaignId: string | null;
  toEmail: string;
  status: EmailStatus;
}

const BOUNCED_EMAIL_COLUMNS = `id, project_id AS "projectId", contact_id AS "contactId", campaign_id AS "campaignId",
  to_email AS "toEmail", status`;

/**
 * Marketing mail of `emails e` that waits (with `projects p` joined): its
 * project's sender health is PAUSED, or its campaign is PAUSED (contract:
 * "Sender health"). Transactional mail is never held.
 */
const MARKETING_HELD = `(p.sending_status = 'PAUSED'
  OR (e.campaign_id IS NOT NULL AND EXISTS (SELECT 1 FROM campaigns k WHERE k.id = e.campaign_id AND k.status = 'PAUSED')))`;

/** GET /emails items: the record without its rendered content or headers. */
const LIST_FIELDS = [
  'e.id',
  'e.projectId',
  'e.contactId',
  'e.templateId',
  'e.campaignId',
  'e.source',
  'e.toEmail',
  'e.fromEmail',
  'e.subject',
  'e.status',
  'e.messageId',
  'e.attempts',
  'e.error',
  'e.dkimSigned',
  'e.returnPath',
  'e.queuedAt',
  'e.sentAt',
  'e.openedAt',
  'e.clickedAt',
  'e.bouncedAt',
  'e.bounce',
  'e.complainedAt',
  'e.createdAt',
  'e.trackOpens',
  'e.trackClicks',
  'e.opens',
  'e.clicks',
];

/** insertEmails: rows per statement, and bytes of JSON per statement (a jsonb value holds at most 256 MB). */
const INSERT_CHUNK_ROWS = 500;
const INSERT_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * Records as JSON arrays of at most `maxRows` records and, unless one record
 * alone is larger, `maxBytes` bytes (UTF-8), in order.
 */
export function jsonChunks(records: unknown[], maxRows: number, maxBytes: number): string[] {
  const chunks: string[] = [];
  let parts: string[] = [];
  let bytes = 2;
  for (const record of records) {
    const json = JSON.stringify(record);
    const size = Buffer.byteLength(json) + 1;
    if (parts.length > 0 && (parts.length >= maxRows || bytes + size > maxBytes)) {
      chunks.push(`[${parts.join(',')}]`);
      parts = [];
      bytes = 2;
    }
    parts.push(json);
    bytes += size;
  }
  if (parts.length > 0) chunks.push(`[${parts.join(',')}]`);
  return chunks;
}

/** The created_at range of the email `$1` names: the statement reads one or two monthly partitions. */
const BY_ID_TIME = idTimeRange('created_at', '$1');
const E_BY_ID_TIME = idTimeRange('e.created_at', '$1');
/**
 * The same for the ids of the array `$1` (`id = ANY($1)`): from the oldest one's time to the
 * newest one's, folded to constants when the statement is planned, so it reads and locks only
 * those months (per-row ranges of a join would prune after locking every month).
 */
const BY_IDS_TIME = idTimeRange('created_at', '$1::uuid[]');

/**
 * SENDING → a final status, RETURNING id (finish, finishRecording); parameters
 * of finishParams. The status it must be in is a parameter ($7, always
 * SENDING), not a literal: with the literal, the prepared statement's generic
 * plan could prove the partial index on SENDING rows usable, and one planned
 * while that index was small looked the row up there (a Filter on id) instead
 * of by primary key; that index holds every email that was ever SENDING until
 * vacuum, so the lookup grew with the mail sent (0.9 ms per finish at 10,000
 * messages).
 */
const FINISH_UPDATE = `UPDATE emails
          SET status = $2::email_status,
              message_id = COALESCE($3, message_id),
              error = $4,
              dkim_signed = COALESCE($5, dkim_signed),
              subject = COALESCE($6, subject),
              return_path = COALESCE($8, return_path),
              sent_at = CASE WHEN $2 = 'SENT' THEN now() ELSE sent_at END,
              bounced_at = CASE WHEN $2 = 'BOUNCED' THEN now() ELSE bounced_at END,
              updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status = $7::email_status
       RETURNING id`;

function finishParams(emailId: string, status: EmailStatus, fields: FinishFields): unknown[] {
  return [
    emailId,
    status,
    fields.messageId ?? null,
    fields.error ?? null,
    fields.dkimSigned ?? null,
    fields.subject ?? null,
    EmailStatus.SENDING,
    fields.returnPath ?? null,
  ];
}

/**
 * The statements of the emails table. Each method runs on the handle it is
 * given: the caller's transaction, or `dataSource.manager` for a statement on
 * its own. Content and attachments are EmailContentsRepository's, idempotency
 * keys IdempotencyKeysRepository's.
 */

/** Counts of one window of GET /project/stats. */
export interface WindowOutcomes {
  sent: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

@Injectable()
export class EmailsRepository {
  /**
   * Composed rows, one statement per 500 rows or 64 MB of JSON: one JSON
   * parameter, turned into rows by Postgres (TypeORM's insert builder cost
   * more CPU than the rest of a workflow's SEND_EMAIL step). Columns follow the entity; a property left
   * undefined takes the column's default, as an entity insert would (rows are
   * grouped by the properties they set, so one row's default never becomes
   * another's NULL).
   */
  async insertEmails(manager: EntityManager, rows: Email[]): Promise<void> {
    if (rows.length === 0) return;
    const columns = manager.connection.getMetadata(Email).columns;
    const groups = new Map<string, { names: string[]; records: Record<string, unknown>[] }>();
    for (const row of rows) {
      row.id ||= newId();
      const record: Record<string, unknown> = {};
      for (const column of columns) {
        const value: unknown = column.getEntityValue(row);
        if (value !== undefined) record[column.databaseName] = value;
      }
      const names = Object.keys(record);
      const key = names.join(',');
      let group = groups.get(key);
      if (!group) groups.set(key, (group = { names, records: [] }));
      group.records.push(record);
    }
    for (const { names, records } of groups.values()) {
      const list = names.map((name) => `"${name}"`).join(', ');
      for (const chunk of jsonChunks(records, INSERT_CHUNK_ROWS, INSERT_CHUNK_BYTES)) {
        await preparedRows(
          manager,
          `INSERT INTO emails (${list}) SELECT ${list} FROM jsonb_populate_recordset(NULL::emails, $1::jsonb)`,
          [chunk],
        );
      }
    }
  }
  /**
   * GET /emails: newest first, keyset after `afterId`, served by (project_id, id) and the status/contact
   * indexes; the total exact up to EXACT_TOTAL_CAP, then estimated (a project sends millions).
   */
  list(
    manager: EntityManager,
    projectId: string,
    filter: EmailListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: Email[]; total: number; totalEstimated: boolean }> {
    const qb = manager
      .createQueryBuilder(Email, 'e')
      .select(LIST_FIELDS)
      .where('e.project_id = :projectId', { projectId });
    if (filter.status) qb.andWhere('e.status = :status', { status: filter.status });
    if (filter.contactId) qb.andWhere('e.contact_id = :contactId', { contactId: filter.contactId });
    if (filter.campaignId)
      qb.andWhere('e.campaign_id = :campaignId', { campaignId: filter.campaignId });
    if (filter.opened !== undefined)
      qb.andWhere(`e.opened_at IS ${filter.opened ? 'NOT ' : ''}NULL`);
    if (filter.clicked !== undefined)
      qb.andWhere(`e.clicked_at IS ${filter.clicked ? 'NOT ' : ''}NULL`);
    return keysetRows(qb, 'e.id', afterId, limit, { capped: true });
  }

  findById(manager: EntityManager, projectId: string, id: string): Promise<Email | null> {
    return manager
      .createQueryBuilder(Email, 'e')
      .where('e.id = :id AND e.project_id = :projectId', { id, projectId })
      .andWhere(idTimeRange('e.created_at', ':id'))
      .getOne();
  }

  /**
   * Takes an email for an attempt in one statement: QUEUED (or SENDING, left
   * by a worker that died mid-attempt) becomes SENDING with attempts + 1, or
   * SUPPRESSED when the contact is suppressed, or unsubscribed and the mail is
   * marketing. Final rows are not touched, nor the rows of a disabled
   * project: null means "nothing to do" (pausedProjectOf tells which).
   * The same statement reads the sender's domain row (senderJoin), so the
   * sender check costs no round trip of its own.
   */
  async claim(manager: EntityManager, emailId: string): Promise<ClaimedEmail | null> {
    const sender = senderJoin('claimed."projectId"', 'claimed."fromEmail"');
    const rows = await preparedRows<Omit<ClaimedEmail, 'sender'> & SenderReadColumns>(
      manager,
      `WITH claimed AS (
       UPDATE emails e
          SET status = CASE WHEN c.suppressed OR (e.marketing AND NOT c.subscribed)
                            THEN 'SUPPRESSED'::email_status ELSE 'SENDING'::email_status END,
              attempts = e.attempts + CASE WHEN c.suppressed OR (e.marketing AND NOT c.subscribed) THEN 0 ELSE 1 END,
              error = CASE WHEN c.suppressed THEN 'contact is suppressed'
                           WHEN e.marketing AND NOT c.subscribed THEN 'contact is unsubscribed'
                           ELSE e.error END,
              updated_at = now()
         FROM contacts c, projects p
        WHERE e.id = $1 AND ${E_BY_ID_TIME} AND c.id = e.contact_id AND e.status IN ('QUEUED', 'SENDING')
          AND p.id = e.project_id AND p.enabled AND NOT (e.marketing AND ${MARKETING_HELD})
       RETURNING e.id, e.project_id AS "projectId", e.contact_id AS "contactId", e.status,
                 e.to_email AS "toEmail", e.to_name AS "toName", e.from_email AS "fromEmail", e.from_name AS "fromName",
                 e.reply_to AS "replyTo", e.subject, e.html, e.text, e.headers, e.attachments, e.attempts,
                 e.queued_at AS "queuedAt", e.track_opens AS "trackOpens", e.track_clicks AS "trackClicks", e.content_id AS "contentId",
                 e.marketing, c.subscribed AS "contactSubscribed",
                 CASE WHEN e.content_id IS NOT NULL THEN c.data END AS "contactData",
                 CASE WHEN p.tracking_domain_status = 'VERIFIED' THEN p.tracking_domain END AS "trackingDomain")
       SELECT claimed.*, ${sender.columns} FROM claimed ${sender.join}`,
      [emailId],
    );
    if (rows.length === 0) return null;
    const {
      senderLookup,
      senderId,
      senderDomain,
      senderStatus,
      senderSelector,
      senderKeySealed,
      senderReturnPath,
      ...email
    } = rows[0];
    return {
      ...email,
      sender: senderReadOf({
        senderLookup,
        senderId,
        senderDomain,
        senderStatus,
        senderSelector,
        senderKeySealed,
        senderReturnPath,
      }),
    };
  }

  /**
   * Why an open email's claim found nothing: its project is disabled
   * (`disabled`), or it is marketing mail held by sender health or a paused
   * campaign (`held`); null when it is not open (a repeated job).
   */
  async whyNotClaimed(
    manager: EntityManager,
    emailId: string,
  ): Promise<{ projectId: string; disabled: boolean } | null> {
    const rows = await queryRows<{ projectId: string; disabled: boolean }>(
      manager,
      `SELECT e.project_id AS "projectId", NOT p.enabled AS disabled
         FROM emails e JOIN projects p ON p.id = e.project_id
        WHERE e.id = $1 AND ${E_BY_ID_TIME} AND e.status IN ('QUEUED', 'SENDING')
          AND (NOT p.enabled OR (e.marketing AND ${MARKETING_HELD}))`,
      [emailId],
    );
    return rows[0] ?? null;
  }

  /** The Message-ID (null before delivery) of each of these emails that exists, by id. */
  async messageIdsOf(manager: EntityManager, ids: string[]): Promise<Map<string, string | null>> {
    const rows = await queryRows<{ id: string; messageId: string | null }>(
      manager,
      `SELECT id, message_id AS "messageId" FROM emails WHERE id = ANY($1::uuid[]) AND ${BY_IDS_TIME}`,
      [ids],
    );
    return new Map(rows.map((row) => [row.id, row.messageId]));
  }

  /**
   * One QUEUED row per recipient from arrays (one statement, whatever the
   * batch size); recipients who already have their email (campaign_recipients,
   * which the emails_unique_keys trigger fills) are left out. Answers the rows inserted.
   */
  async insertBulk(
    manager: EntityManager,
    spec: BulkRowSpec,
    ids: string[],
    recipients: Array<{ contactId: string; email: string }>,
  ): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      manager,
      `WITH inserted AS (
         INSERT INTO emails (id, project_id, contact_id, campaign_id, content_id, source, marketing, track_opens, track_clicks,
                             to_email, from_email, from_name, reply_to, subject, status, priority)
         SELECT r.id, $1, r.contact_id, $2, $3, $4::email_source, $5, $6, $7, r.email, $8, $9, $10, $11, 'QUEUED', $12
           FROM unnest($13::uuid[], $14::uuid[], $15::varchar[]) AS r(id, contact_id, email)
          WHERE NOT EXISTS (SELECT 1 FROM campaign_recipients k WHERE k.campaign_id = $2 AND k.contact_id = r.contact_id)
         RETURNING 1)
       SELECT count(*)::int AS n FROM inserted`,
      [
        spec.projectId,
        spec.campaignId,
        spec.contentId,
        spec.source,
        spec.marketing,
        spec.trackOpens,
        spec.trackClicks,
        spec.from.email,
        spec.from.name ?? null,
        spec.replyTo ?? null,
        spec.subject,
        spec.priority,
        ids,
        recipients.map((r) => r.contactId),
        recipients.map((r) => r.email),
      ],
    );
    return row.n;
  }

  /** QUEUED emails of a campaign after a contact id, in contact order (the unique (campaign_id, contact_id) index). */
  queuedOfCampaign(
    manager: EntityManager,
    campaignId: string,
    afterContactId: string | null,
    limit: number,
  ): Promise<QueuedCampaignEmail[]> {
    return queryRows<QueuedCampaignEmail>(
      manager,
      `SELECT id, contact_id AS "contactId", priority, status FROM emails
        WHERE campaign_id = $1 AND contact_id > COALESCE($2::uuid, '00000000-0000-0000-0000-000000000000') AND status = 'QUEUED'
        ORDER BY contact_id LIMIT $3`,
      [campaignId, afterContactId, limit],
    );
  }

  async cancelQueuedOfCampaign(manager: EntityManager, campaignId: string): Promise<number> {
    // One counter adjustment for the whole statement instead of the row trigger's one per email
    // (migration CampaignCounterBulk): QUEUED → CANCELLED changes no other counter. The setting is
    // local to a transaction: outside one, the update and the adjustment would both count.
    if (!manager.queryRunner?.isTransactionActive)
      throw new Error('cancelQueuedOfCampaign runs inside a transaction');
    await manager.query(`SELECT set_config('mw.counters_by_statement', 'on', true)`);
    const [row] = await queryRows<{ n: number }>(
      manager,
      `WITH cancelled AS (
         UPDATE emails SET status = 'CANCELLED', error = 'campaign cancelled', updated_at = now()
          WHERE campaign_id = $1 AND status = 'QUEUED'
         RETURNING 1)
       SELECT count(*)::int AS n FROM cancelled`,
      [campaignId],
    );
    await manager.query(`SELECT set_config('mw.counters_by_statement', 'off', true)`);
    if (row.n > 0) {
      await manager.query(
        `UPDATE campaign_counters SET queued = queued - $2, cancelled = cancelled + $2 WHERE campaign_id = $1 AND slot = 0`,
        [campaignId, row.n],
      );
    }
    return row.n;
  }

  /** The recipient unsubscribed through this email's link (first time only). */
  async markUnsubscribed(manager: EntityManager, emailId: string): Promise<void> {
    await queryRows(
      manager,
      `UPDATE emails SET unsubscribed_at = now() WHERE id = $1 AND ${BY_ID_TIME} AND unsubscribed_at IS NULL`,
      [emailId],
    );
  }
  /** SENDING → a final status. False when the row was not SENDING any more (someone else finished it). */
  async finish(
    manager: EntityManager,
    emailId: string,
    status: EmailStatus.SENT | EmailStatus.FAILED | EmailStatus.BOUNCED,
    fields: FinishFields,
  ): Promise<boolean> {
    const rows = await queryRows<{ id: string }>(
      manager,
      FINISH_UPDATE,
      finishParams(emailId, status, fields),
    );
    return rows.length > 0;
  }

  /**
   * finish() and the email's event in one statement: one round trip, no
   * BEGIN/COMMIT (a statement is its own transaction, so the status and the
   * event commit together or not at all). The event is written only when the
   * row was SENDING; null otherwise. For an email with nothing else to write
   * in that transaction (no attachments to release).
   */
  async finishRecording(
    manager: EntityManager,
    emailId: string,
    status: EmailStatus.SENT | EmailStatus.FAILED | EmailStatus.BOUNCED,
    fields: FinishFields,
    event: NewEvent,
  ): Promise<EventRow | null> {
    const params = finishParams(emailId, status, fields);
    const insert = insertEventFrom('finished', params.length + 1, event);
    const rows = await preparedRows<EventRow>(
      manager,
      `WITH finished AS (${FINISH_UPDATE}) ${insert.sql}`,
      [...params, ...insert.params],
    );
    return rows[0] ?? null;
  }

  /** The email a report names (no lock: the policy's updates below check the status they start from). */
  async findForBounce(manager: EntityManager, emailId: string): Promise<BouncedEmail | null> {
    const rows = await queryRows<BouncedEmail>(
      manager,
      `SELECT ${BOUNCED_EMAIL_COLUMNS} FROM emails WHERE id = $1 AND ${BY_ID_TIME}`,
      [emailId],
    );
    return rows[0] ?? null;
  }

  /** findForBounce for several emails in one statement (an inbound batch); those missing are absent. */
  async findManyForBounce(
    manager: EntityManager,
    emailIds: string[],
  ): Promise<Map<string, BouncedEmail>> {
    const rows = await queryRows<BouncedEmail>(
      manager,
      `SELECT ${BOUNCED_EMAIL_COLUMNS} FROM emails WHERE id = ANY($1::uuid[]) AND ${BY_IDS_TIME}`,
      [emailIds],
    );
    return new Map(rows.map((row) => [row.id, row]));
  }

  /**
   * Sender health's counts: the project's messages handed to a server in the
   * last `days` days (accepted, or refused with a 5xx), not before `from`
   * when given, with those now BOUNCED and COMPLAINED. The expression index
   * emails_project_id_outcome_at_idx serves it.
   */
  async outcomesSince(
    manager: EntityManager,
    projectId: string,
    days: number,
    from: Date | null,
  ): Promise<{ sent: number; bounced: number; complained: number }> {
    const [row] = await queryRows<{ sent: number; bounced: number; complained: number }>(
      manager,
      `SELECT count(*)::int AS sent,
              count(*) FILTER (WHERE status = 'BOUNCED')::int AS bounced,
              count(*) FILTER (WHERE status = 'COMPLAINED')::int AS complained
         FROM emails
        WHERE project_id = $1 AND (sent_at IS NOT NULL OR bounced_at IS NOT NULL)
          AND COALESCE(sent_at, bounced_at) >= GREATEST(now() - make_interval(days => $2), COALESCE($3::timestamptz, '-infinity'))`,
      [projectId, days, from],
    );
    return row;
  }

  /**
   * GET /project/stats: outcomes of the mail that went out (or was refused) on the UTC days
   * [`from`, `mid`) and [`mid`, `to`] (dates, `YYYY-MM-DD`), summed from email_outcome_days (one
   * row per day and writing backend), so the cost is the window's days, not its emails. Opens
   * and clicks are counted per email (first open or click) on its outcome day, so a rate is
   * "share of emails opened", whatever day they were opened on.
   */
  async outcomesByDays(
    manager: EntityManager,
    projectId: string,
    days: { from: string; mid: string; to: string },
  ): Promise<{ current: WindowOutcomes; previous: WindowOutcomes }> {
    const sums = (side: 'c' | 'p') => {
      const inside = `day ${side === 'c' ? '>=' : '<'} $3::date`;
      return ['sent', 'opened', 'clicked', 'bounced', 'complained']
        .map((n) => `COALESCE(sum(${n}) FILTER (WHERE ${inside}), 0)::float8 AS ${side}_${n}`)
        .join(', ');
    };
    const [row] = await queryRows<Record<string, number>>(
      manager,
      `SELECT ${sums('c')}, ${sums('p')}
         FROM email_outcome_days
        WHERE project_id = $1 AND day >= $2::date AND day <= $4::date`,
      [projectId, days.from, days.mid, days.to],
    );
    const side = (p: string): WindowOutcomes => ({
      sent: row[`${p}_sent`],
      opened: row[`${p}_opened`],
      clicked: row[`${p}_clicked`],
      bounced: row[`${p}_bounced`],
      complained: row[`${p}_complained`],
    });
    return { current: side('c'), previous: side('p') };
  }

  /** The latest email of the project to this (normalised) address that went out or was refused. */
  async latestSentTo(
    manager: EntityManager,
    projectId: string,
    address: string,
  ): Promise<string | null> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT e.id FROM contacts c JOIN emails e ON e.contact_id = c.id
        WHERE c.project_id = $1 AND c.email = $2 AND e.status IN ('SENDING', 'SENT', 'BOUNCED', 'COMPLAINED')
        ORDER BY e.id DESC LIMIT 1`,
      [projectId, address],
    );
    return rows[0]?.id ?? null;
  }

  /**
   * A hard bounce: SENDING (the 5xx during delivery, which also writes its
   * error and rendered subject) or SENT → BOUNCED. Null when the email was
   * in no such status (already bounced or complained, never sent).
   */
  async markHardBounced(
    manager: EntityManager,
    emailId: string,
    bounce: EmailBounce,
    delivery: { error?: string; subject?: string; returnPath?: string } = {},
  ): Promise<BouncedEmail | null> {
    const rows = await queryRows<BouncedEmail>(
      manager,
      `UPDATE emails SET status = 'BOUNCED', bounced_at = now(), bounce = $2::jsonb,
              error = COALESCE($3, error), subject = COALESCE($4, subject),
              return_path = COALESCE($5, return_path), updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status IN ('SENDING', 'SENT')
       RETURNING ${BOUNCED_EMAIL_COLUMNS}`,
      [
        emailId,
        JSON.stringify(bounce),
        delivery.error ?? null,
        delivery.subject ?? null,
        delivery.returnPath ?? null,
      ],
    );
    return rows[0] ?? null;
  }

  /**
   * markHardBounced for several distinct emails in one statement (an inbound
   * batch, no delivery fields); answers the ids it moved to BOUNCED.
   */
  async markHardBouncedMany(
    manager: EntityManager,
    bounces: Array<{ emailId: string; bounce: EmailBounce }>,
  ): Promise<Set<string>> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `UPDATE emails e SET status = 'BOUNCED', bounced_at = now(), bounce = b.bounce, updated_at = now()
         FROM unnest($1::uuid[], $2::jsonb[]) AS b(id, bounce)
        WHERE e.id = b.id AND ${idTimeRange('e.created_at', '$1::uuid[]')} AND e.status IN ('SENDING', 'SENT')
       RETURNING e.id`,
      [bounces.map((b) => b.emailId), bounces.map((b) => JSON.stringify(b.bounce))],
    );
    return new Set(rows.map((row) => row.id));
  }

  /** A complaint: SENDING, SENT or BOUNCED → COMPLAINED (never from COMPLAINED, never before sending). */
  async markComplained(manager: EntityManager, emailId: string): Promise<BouncedEmail | null> {
    const rows = await queryRows<BouncedEmail>(
      manager,
      `UPDATE emails SET status = 'COMPLAINED', complained_at = now(), updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status IN ('SENDING', 'SENT', 'BOUNCED')
       RETURNING ${BOUNCED_EMAIL_COLUMNS}`,
      [emailId],
    );
    return rows[0] ?? null;
  }

  /** A soft bounce of a sent email: recorded as its `bounce` unless a hard one is; the status stays. */
  async markSoftBounced(
    manager: EntityManager,
    emailId: string,
    bounce: EmailBounce,
  ): Promise<BouncedEmail | null> {
    const rows = await queryRows<BouncedEmail>(
      manager,
      `UPDATE emails SET bounce = $2::jsonb, updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status IN ('SENDING', 'SENT') AND (bounce IS NULL OR bounce->>'type' = 'soft')
       RETURNING ${BOUNCED_EMAIL_COLUMNS}`,
      [emailId, JSON.stringify(bounce)],
    );
    return rows[0] ?? null;
  }

  /** How many of the contact's last `last` emails that went out (or were refused) soft-bounced. */
  async softBouncesOfLast(
    manager: EntityManager,
    contactId: string,
    last: number,
  ): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      manager,
      `SELECT count(*) FILTER (WHERE bounce->>'type' = 'soft')::int AS n
         FROM (SELECT bounce FROM emails
                WHERE contact_id = $1 AND status IN ('SENDING', 'SENT', 'BOUNCED', 'COMPLAINED')
                ORDER BY id DESC LIMIT $2) recent`,
      [contactId, last],
    );
    return row.n;
  }

  /** A transient failure: back to QUEUED until BullMQ runs the next attempt. */
  async requeue(manager: EntityManager, emailId: string, error: string): Promise<void> {
    await queryRows(
      manager,
      `UPDATE emails SET status = 'QUEUED', error = $2, updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status = 'SENDING'`,
      [emailId, error],
    );
  }

  /**
   * Gives a claimed email back to QUEUED: its delivery waits for its provider
   * group's pace (no attempt made, `refund`), or the attempt was deferred
   * (421, 451, 4.7.x). `error`, when given, replaces the row's.
   */
  async releaseClaim(
    manager: EntityManager,
    emailId: string,
    error: string | null,
    refund: boolean,
  ): Promise<void> {
    await queryRows(
      manager,
      `UPDATE emails SET status = 'QUEUED', attempts = attempts - $3, error = COALESCE($2, error), updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status = 'SENDING'`,
      [emailId, error, refund ? 1 : 0],
    );
  }

  /** The attempt that just failed was the last one, or the job was lost: FAILED unless already final. */
  async failIfOpen(
    manager: EntityManager,
    emailId: string,
    error: string,
  ): Promise<FailedEmail | null> {
    const rows = await queryRows<FailedEmail>(
      manager,
      `UPDATE emails SET status = 'FAILED', error = $2, updated_at = now()
        WHERE id = $1 AND ${BY_ID_TIME} AND status IN ('QUEUED', 'SENDING')
       RETURNING project_id AS "projectId", contact_id AS "contactId", to_email AS "toEmail", attachments`,
      [emailId, error],
    );
    return rows[0] ?? null;
  }

  /**
   * Open rows older than `minutes`, for the delivery recovery: QUEUED since
   * then (outside campaigns: a campaign's QUEUED rows are its feed's, which
   * keeps the delivery backlog bounded), or SENDING untouched since then (an
   * attempt lasts seconds). Normally
   * each already has a job (a retry waiting out its backoff, a long campaign
   * backlog, a stalled job about to run again); the recovery re-adds them with
   * the same job id, which BullMQ ignores when the job exists. Those without
   * one (a crash between commit and enqueue, Redis restarted empty) get it.
   * At most `limit` of each status, oldest first, each from its partial index.
   * Disabled projects' rows are left out: their jobs are parked, and a
   * disabled project's old rows must not fill every run's page.
   * A SENDING row whose attempts are used up is not taken: its last attempt
   * may have been accepted before the worker died (re-sending could deliver
   * it twice), so it stays SENDING for an operator to look at.
   */
  findStaleOpen(
    manager: EntityManager,
    minutes: number,
    limit: number,
    maxAttempts: number,
  ): Promise<StaleEmail[]> {
    return queryRows<StaleEmail>(
      manager,
      `(SELECT id, priority, status FROM emails
         WHERE status = 'QUEUED' AND campaign_id IS NULL AND queued_at < now() - make_interval(mins => $1)
           AND project_id NOT IN (SELECT id FROM projects WHERE NOT enabled)
         ORDER BY queued_at LIMIT $2)
       UNION ALL
       (SELECT id, priority, status FROM emails
         WHERE status = 'SENDING' AND updated_at < now() - make_interval(mins => $1) AND attempts < $3
           AND project_id NOT IN (SELECT id FROM projects WHERE NOT enabled)
         ORDER BY updated_at LIMIT $2)`,
      [minutes, limit, maxAttempts],
    );
  }

  /**
   * SENDING rows whose last attempt began more than `minutes` ago (every
   * attempt used): no retry is due for them, so only their job, if it still
   * runs somewhere, can finish them.
   */
  findStaleLastAttempts(
    manager: EntityManager,
    minutes: number,
    limit: number,
    maxAttempts: number,
  ): Promise<Array<{ id: string }>> {
    return queryRows<{ id: string }>(
      manager,
      `SELECT id FROM emails
        WHERE status = 'SENDING' AND updated_at < now() - make_interval(mins => $1) AND attempts >= $3
        ORDER BY updated_at LIMIT $2`,
      [minutes, limit, maxAttempts],
    );
  }

  /**
   * The project's latest email to `recipient` that went out at or before
   * `before`, within `withinDays` of it: a provider report that carries no
   * identifier of ours names only the recipient (provider webhooks).
   */
  async findLatestSentTo(
    manager: EntityManager,
    projectId: string,
    recipient: string,
    before: Date,
    withinDays: number,
  ): Promise<string | null> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `SELECT e.id FROM contacts c JOIN emails e ON e.project_id = c.project_id AND e.contact_id = c.id
        WHERE c.project_id = $1 AND c.email = $2
          AND e.status IN ('SENDING', 'SENT', 'BOUNCED', 'COMPLAINED')
          AND COALESCE(e.sent_at, e.updated_at) <= $3
          AND COALESCE(e.sent_at, e.updated_at) > $3::timestamptz - make_interval(days => $4)
        ORDER BY e.id DESC LIMIT 1`,
      [projectId, recipient, before, withinDays],
    );
    return rows[0]?.id ?? null;
  }
}
