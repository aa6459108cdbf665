/**
 * Rendering before a transaction (POST /v1/send, a campaign's test send): messages are rendered
 * for the contacts as they are expected to be, and the transaction checks the rows it locks
 * against those; one that changed in between rolls back and is rendered again.
 */
import type { ContactRow } from '../contacts/contact.row';
import { canonicalJson } from './idempotency';

/** Renders of a send again after this many tries whose contacts changed under them: 409. */
export const MAX_RENDER_ATTEMPTS = 3;

/** A contact locked by the send's transaction differs from the one its message was rendered for. */
export class RecipientsChanged extends Error {
  constructor(readonly locked: Map<string, ContactRow>) {
    super('recipients changed since their messages were rendered');
  }
}

/** Whether a message rendered for `expected` fits `contact`: what the render context reads is the same. */
export function rendersAlike(contact: ContactRow, expected: ContactRow | undefined): boolean {
  return (
    expected !== undefined &&
    contact.id === expected.id &&
    contact.email === expected.email &&
    contact.subscribed === expected.subscribed &&
    canonicalJson(contact.data) === canonicalJson(expected.data)
  );
}
