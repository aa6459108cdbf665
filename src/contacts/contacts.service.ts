import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { normalizeEmail, toTrackedDataPatch } from './contact-data';
import type { ContactRow } from './contact.view';
import { ContactsRepository } from './contacts.repository';

export interface UpsertContactOptions {
  /** Given: a new contact starts with it and an existing one is set to it. */
  subscribed?: boolean;
  /** A new contact's state when `subscribed` is not given (track: true, send: false). */
  defaultSubscribed: boolean;
  /** Merged top-level; `{value, persistent:false}` values are left out; null removes a key. */
  data?: Record<string, unknown>;
}

export interface UpsertContactResult {
  contact: ContactRow;
  created: boolean;
  /** An existing contact's `subscribed` was changed by this call (record contact.subscribed/unsubscribed). */
  subscriptionChanged: boolean;
}

@Injectable()
export class ContactsService {
  constructor(private readonly contacts: ContactsRepository) {}

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
    const patch = toTrackedDataPatch(opts.data);
    const { row, created } = await this.contacts.upsert(
      manager,
      projectId,
      normalizeEmail(email),
      opts.subscribed ?? opts.defaultSubscribed,
      patch,
    );
    if (!created && opts.subscribed !== undefined && row.subscribed !== opts.subscribed) {
      const contact = await this.contacts.setSubscribed(manager, projectId, row.id, opts.subscribed);
      return { contact, created, subscriptionChanged: true };
    }
    return { contact: row, created, subscriptionChanged: false };
  }
}
