import { newId } from '../database/id';
import type { DataPatch } from './contact-data';

/**
 * One contact to create or update through the SQL function `upsert_contacts`
 * (migration ContactUpsertRule), which holds the rule for every writer:
 * ContactsRepository (upsertByEmail, imports) and TrackRepository (the track
 * batches). contact-data.ts says what a request's `data` means; the function
 * says how it meets a stored contact.
 *
 * Precondition: one call holds each (projectId, email) once. Postgres refuses
 * an INSERT ... ON CONFLICT DO UPDATE that meets the same row twice ("cannot
 * affect row a second time"), so callers merge duplicates first (imports:
 * mergeDuplicates; track batches: one track per contact per batch).
 */
export interface ContactUpsert {
  projectId: string;
  /** Normalised. */
  email: string;
  patch: DataPatch;
  /** Given: a new contact starts with it and an existing one is set to it. Null: an existing one keeps its state. */
  subscribed: boolean | null;
  /** A new contact's state when `subscribed` is null. */
  subscribedIfNew: boolean;
  /** The id a new contact is created with (default: a fresh one). */
  idIfNew?: string;
}

/** One element of `upsert_contacts`' JSON argument; `ord` links it to the row the function answers. */
export interface ContactUpsertInput {
  ord: number;
  contact_id: string;
  project_id: string;
  email: string;
  subscribed: boolean | null;
  subscribed_if_new: boolean;
  set_data: Record<string, unknown>;
  remove_keys: string[];
}

export function contactUpsertInput(ord: number, upsert: ContactUpsert): ContactUpsertInput {
  return {
    ord,
    contact_id: upsert.idIfNew ?? newId(),
    project_id: upsert.projectId,
    email: upsert.email,
    subscribed: upsert.subscribed,
    subscribed_if_new: upsert.subscribedIfNew,
    set_data: upsert.patch.set,
    remove_keys: upsert.patch.remove,
  };
}
