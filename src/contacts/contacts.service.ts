import { Readable } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, keysetPage, Page, pageOf } from '../common/pagination/pagination';
import { newId } from '../database/id';
import { sqlState, SQLSTATE } from '../database/postgres-errors';
import { SYSTEM_EVENTS } from '../events/event-names';
import type { EventRow } from '../events/event.row';
import { decodeEventCursor, encodeEventCursor } from '../events/event-cursors';
import { EventsService } from '../events/events.service';
import { normalizeEmail } from '../common/validation/email';
import { toDataPatch, toTrackedDataPatch } from './contact-data';
import { SuppressionReason } from './contact.entity';
import type { ContactRow } from './contact.row';
import {
  type ContactListFilter,
  ContactsRepository,
  type SuppressedContact,
} from './contacts.repository';
import { ContactResponse, toContactResponse } from './dto/contact.response';
import type { CreateContactDto } from './dto/create-contact.dto';
import type { ContactFiltersQueryDto, ListContactsQueryDto } from './dto/list-contacts.query';
import { contactCsvHeader, contactCsvLine } from './contacts-csv';
import type { UpdateContactDto } from './dto/update-contact.dto';
import { ReadDatabase } from '../database/read-database';

export interface UpsertContactOptions {
  /** Given: a new contact starts with it and an existing one is set to it. */
  subscribed?: boolean;
  /** A new contact's state when `subscribed` is not given (track: true, send: false). */
  defaultSubscribed: boolean;
  /** Merged top-level; `{value, persistent:false}` values are left out; null removes a key. */
  data?: Record<string, unknown>;
  /** The id of the contact if this call creates it (from expectedUpserts). */
  idIfNew?: string;
}

export interface UpsertContactResult {
  contact: ContactRow;
  created: boolean;
  /** An existing contact's `subscribed` was changed by this call (record contact.subscribed/unsubscribed). */
  subscriptionChanged: boolean;
}

/** What ContactsService.unsubscribe did. */
export interface UnsubscribeResult {
  /** The contact after the call; null when it does not exist (erased, or another project's). */
  contact: ContactRow | null;
  /** It was subscribed and now is not. */
  changed: boolean;
  /** `contact.unsubscribed`, recorded only on a change; publish it after commit. */
  event: EventRow | null;
}

/** Why a contact is unsubscribed: stored on the `contact.unsubscribed` event. */
export interface UnsubscribeCause {
  emailId?: string | null;
  data: Record<string, unknown>;
}

/** A change applyUpdate makes to a contact. */
export interface ContactChange {
  data?: Record<string, unknown> | null;
  subscribed?: boolean;
}

@Injectable()
export class ContactsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: list pages (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly contacts: ContactsRepository,
    private readonly events: EventsService,
  ) {}

  /**
   * Creates or updates the contact of `email` inside the caller's transaction.
   * One INSERT ... ON CONFLICT (project_id, email) DO UPDATE ... RETURNING, so
   * concurrent calls for a new email create exactly one contact. The row stays
   * locked until the caller commits, which makes the subscription check that
   * follows exact. The caller validates the address; it is normalised here.
   */
  async upsertByEmail(
    manager: EntityManager,
    projectId: string,
    email: string,
    opts: UpsertContactOptions,
  ): Promise<UpsertContactResult> {
    // An existing contact's subscription is changed apart, so the change can be seen and recorded.
    const { row, created } = await this.contacts.upsert(manager, {
      projectId,
      email: normalizeEmail(email),
      patch: toTrackedDataPatch(opts.data),
      subscribed: null,
      subscribedIfNew: opts.subscribed ?? opts.defaultSubscribed,
      idIfNew: opts.idIfNew,
    });
    if (!created && opts.subscribed !== undefined && row.subscribed !== opts.subscribed) {
      const contact = await this.contacts.setSubscribed(
        manager,
        projectId,
        row.id,
        opts.subscribed,
      );
      return { contact, created, subscriptionChanged: true };
    }
    return { contact: row, created, subscriptionChanged: false };
  }

  /**
   * Each address's contact as upsertByEmail with `opts` would leave it if nothing else changed it
   * first, read without locks (a new contact gets the id to create it with: pass it as `idIfNew`).
   * For work that must not hold a transaction, such as rendering before a send's transaction;
   * the transaction then compares the rows it locked with these.
   */
  async expectedUpserts(
    manager: EntityManager,
    projectId: string,
    emails: string[],
    opts: UpsertContactOptions,
  ): Promise<Map<string, ContactRow>> {
    const normalized = emails.map(normalizeEmail);
    const rows = await this.contacts.expectedUpserts(
      manager,
      projectId,
      normalized,
      toTrackedDataPatch(opts.data),
      opts.subscribed ?? null,
      opts.defaultSubscribed,
    );
    const now = new Date();
    return new Map(
      rows.map((row) => [
        row.email,
        row.id
          ? (row as ContactRow)
          : { ...row, id: newId(), projectId, createdAt: now, updatedAt: now },
      ]),
    );
  }

  /**
   * A hard bounce, a complaint or a manual suppression: the address is never
   * mailed again (suppressed and unsubscribed), inside the caller's
   * transaction. No event: the caller records the bounce itself. True when
   * the contact's state changed.
   */
  async suppress(
    manager: EntityManager,
    projectId: string,
    contactId: string,
    reason: SuppressionReason = SuppressionReason.BOUNCE,
  ): Promise<boolean> {
    return (await this.contacts.suppress(manager, projectId, contactId, reason)) !== null;
  }

  /** suppress for several contacts (an inbound batch), one statement in the caller's transaction. */
  async suppressMany(
    manager: EntityManager,
    contacts: Array<{ projectId: string; id: string }>,
    reason: SuppressionReason,
  ): Promise<void> {
    if (contacts.length > 0) await this.contacts.suppressMany(manager, contacts, reason);
  }

  /** Lifts a suppression; the contact stays unsubscribed until it subscribes again. */
  async unsuppress(projectId: string, contactId: string): Promise<DeletedResponse> {
    if (!(await this.contacts.unsuppress(this.dataSource.manager, projectId, contactId)))
      throw ApiException.notFound('contact', contactId);
    return { id: contactId, deleted: true };
  }

  /** POST /suppressions: the contact of `email` (created unsubscribed if missing) suppressed by hand. */
  async suppressByEmail(projectId: string, email: string): Promise<SuppressedContact> {
    return this.dataSource.transaction(async (manager) => {
      const { contact } = await this.upsertByEmail(manager, projectId, email, {
        defaultSubscribed: false,
      });
      await this.contacts.suppress(manager, projectId, contact.id, SuppressionReason.MANUAL);
      return (await this.contacts.findSuppressed(
        manager,
        projectId,
        contact.id,
      )) as SuppressedContact;
    });
  }

  /** Suppressed contacts of the project (GET /suppressions), newest first. */
  async listSuppressed(
    projectId: string,
    reason: SuppressionReason | undefined,
    cursor: string | undefined,
    limit: number,
  ): Promise<Page<SuppressedContact>> {
    // Ordered by suppression time: the cursor carries it with the id (the events lists' cursor).
    const after = cursor ? decodeEventCursor(cursor) : null;
    const { rows, total } = await this.contacts.listSuppressed(
      this.read.manager,
      projectId,
      reason,
      after,
      limit,
    );
    return keysetPage(
      rows,
      limit,
      total,
      ({ micros: _micros, ...row }) => row,
      (last) => encodeEventCursor({ micros: last.micros, id: last.id }),
    );
  }

  /**
   * Unsubscribes inside the caller's transaction and records
   * `contact.unsubscribed` once, on the actual change, so repeated clicks of
   * an unsubscribe link are harmless. The caller publishes `event` after commit.
   */
  async unsubscribe(
    manager: EntityManager,
    projectId: string,
    contactId: string,
    cause: UnsubscribeCause,
  ): Promise<UnsubscribeResult> {
    const changed = await this.contacts.unsubscribeIfSubscribed(manager, projectId, contactId);
    if (!changed) {
      const contact = await this.contacts.findById(manager, projectId, contactId);
      return { contact, changed: false, event: null };
    }
    const event = await this.events.record(manager, {
      projectId,
      contactId,
      emailId: cause.emailId ?? null,
      name: SYSTEM_EVENTS.CONTACT_UNSUBSCRIBED,
      data: cause.data,
    });
    return { contact: changed, changed: true, event };
  }

  /** The system event for a subscription change, for callers of upsertByEmail. */
  subscriptionEventName(subscribed: boolean): string {
    return subscribed ? SYSTEM_EVENTS.CONTACT_SUBSCRIBED : SYSTEM_EVENTS.CONTACT_UNSUBSCRIBED;
  }

  async list(projectId: string, query: ListContactsQueryDto): Promise<Page<ContactResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.contacts.list(
      this.read.manager,
      projectId,
      toListFilter(query),
      afterId,
      limit,
    );
    return pageOf(rows, limit, total.total, toContactResponse, (row) => row.id, total.estimated);
  }

  /**
   * GET /contacts/export: every contact the list's filters select, newest first, as CSV. The
   * stream reads a page only when the client has taken the previous one, so memory stays one
   * page whatever the project's size; contacts created meanwhile (newer ids) are not included.
   */
  exportCsv(projectId: string, query: ContactFiltersQueryDto): Readable {
    const filter = toListFilter(query);
    const pages = async function* (this: ContactsService): AsyncGenerator<string> {
      yield contactCsvHeader();
      let beforeId: string | null = null;
      for (;;) {
        const rows = await this.contacts.exportPage(
          this.dataSource.manager,
          projectId,
          filter,
          beforeId,
          EXPORT_PAGE_SIZE,
        );
        if (rows.length > 0) yield rows.map(contactCsvLine).join('');
        if (rows.length < EXPORT_PAGE_SIZE) return;
        beforeId = rows[rows.length - 1].id;
      }
    }.call(this);
    return Readable.from(pages, { objectMode: false, highWaterMark: 1 });
  }

  async create(projectId: string, dto: CreateContactDto): Promise<ContactResponse> {
    const email = normalizeEmail(dto.email);
    try {
      const row = await this.contacts.insert(
        this.dataSource.manager,
        projectId,
        email,
        dto.subscribed ?? true,
        toDataPatch(dto.data).set,
      );
      return toContactResponse(row);
    } catch (error) {
      if (sqlState(error) === SQLSTATE.UNIQUE_VIOLATION) {
        throw ApiException.conflict(
          `A contact with email ${email} already exists in this project`,
          'Update the existing contact with PATCH /contacts/{id} (find it with GET /contacts?email=...), or use POST /v1/track to create-or-update.',
        );
      }
      throw error;
    }
  }

  async get(projectId: string, id: string): Promise<ContactResponse> {
    const row = await this.contacts.findById(this.dataSource.manager, projectId, id);
    if (!row) throw ApiException.notFound('contact', id);
    return toContactResponse(row);
  }

  /**
   * Merge semantics: top-level `data` keys overwrite, null removes. A change of
   * `subscribed` records contact.subscribed / contact.unsubscribed in the same transaction.
   */
  async update(projectId: string, id: string, dto: UpdateContactDto): Promise<ContactResponse> {
    const { row, events } = await this.dataSource.transaction(async (manager) => {
      const result = await this.applyUpdate(manager, projectId, id, dto);
      if (!result) throw ApiException.notFound('contact', id);
      return result;
    });
    await this.events.publish(events.map((event) => ({ ...event, email: row.email })));
    return toContactResponse(row);
  }

  /**
   * PATCH /contacts' change inside the caller's transaction (workflows'
   * UPDATE_CONTACT too): data merged, `subscribed` set, the subscription event
   * recorded on a change; the caller publishes `events` after commit. Null
   * when the contact does not exist.
   */
  async applyUpdate(
    manager: EntityManager,
    projectId: string,
    id: string,
    change: ContactChange,
  ): Promise<{ row: ContactRow; events: EventRow[] } | null> {
    return (await this.applyUpdates(manager, projectId, [id], change)).get(id) ?? null;
  }

  /**
   * applyUpdate's change to several contacts of the project at once (a batch
   * of workflow UPDATE_CONTACT steps): by id, those that exist. The rows are
   * locked first (in id order) only when `subscribed` is set, to compare it.
   */
  async applyUpdates(
    manager: EntityManager,
    projectId: string,
    ids: string[],
    change: ContactChange,
  ): Promise<Map<string, { row: ContactRow; events: EventRow[] }>> {
    const out = new Map<string, { row: ContactRow; events: EventRow[] }>();
    const before =
      change.subscribed !== undefined
        ? new Map(
            (await this.contacts.lockByIds(manager, projectId, ids)).map((row) => [row.id, row]),
          )
        : null;
    if (before && before.size === 0) return out;
    const rows = await this.contacts.updateMany(
      manager,
      projectId,
      ids,
      change.subscribed,
      toDataPatch(change.data ?? undefined),
    );
    const changed = rows.filter(
      (row) => before && before.get(row.id)?.subscribed !== row.subscribed,
    );
    const events =
      change.subscribed !== undefined && changed.length > 0
        ? await this.events.recordMany(
            manager,
            changed.map((row) => ({
              projectId,
              contactId: row.id,
              name: this.subscriptionEventName(change.subscribed as boolean),
              data: { source: 'api' },
            })),
          )
        : [];
    for (const row of rows)
      out.set(row.id, { row, events: events.filter((event) => event.contactId === row.id) });
    return out;
  }

  /** Stored rows of the project among these ids, by id (a sending feature's read for many). */
  async findRows(
    manager: EntityManager,
    projectId: string,
    ids: string[],
  ): Promise<Map<string, ContactRow>> {
    const rows = ids.length > 0 ? await this.contacts.findByIds(manager, projectId, ids) : [];
    return new Map(rows.map((row) => [row.id, row]));
  }

  /** The stored row (suppression included) for a sending feature, or null. */
  findRow(manager: EntityManager, projectId: string, id: string): Promise<ContactRow | null> {
    return this.contacts.findById(manager, projectId, id);
  }

  /**
   * Erases the contact; its events and email records go with it (ON DELETE
   * CASCADE). One statement: of concurrent deletes, one succeeds and the rest are 404.
   */
  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    const deleted = await this.contacts.delete(this.dataSource.manager, projectId, id);
    if (!deleted) throw ApiException.notFound('contact', id);
    return { id, deleted: true };
  }
}

/** Contacts per statement of an export. */
const EXPORT_PAGE_SIZE = 1000;

function toListFilter(query: ContactFiltersQueryDto): ContactListFilter {
  return {
    subscribed: query.subscribed,
    email: query.email !== undefined ? normalizeEmail(query.email) : undefined,
    search: query.search?.trim().toLowerCase(),
  };
}
