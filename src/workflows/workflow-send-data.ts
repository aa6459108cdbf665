import type { EntityManager } from 'typeorm';
import { isPersistenceWrapper } from '../contacts/contact-data';
import { isReservedEventName } from '../events/event-names';
import type { EventsService } from '../events/events.service';
import type { WorkflowExecution } from './workflow.entity';

/**
 * The send's data of a SEND_EMAIL or WEBHOOK step. The contract's render
 * context is the contact's data, then the send's data over it; the contact
 * is read as it is when the step runs, so what earlier steps (UPDATE_CONTACT)
 * or later tracks wrote shows. The send's data is what the trigger carried
 * that never reached the contact: a track or a manual start merged its data
 * into the contact except `{value, persistent: false}` values, which are
 * the send's data; a system event's data (`email.clicked`'s url) never
 * reaches a contact, so all of it is. Passing a track's merged values again
 * would put the trigger's old values over the contact's newer ones.
 */
export async function sendData(
  events: EventsService,
  manager: EntityManager,
  x: WorkflowExecution,
  triggerNames?: Map<string, string | null>,
): Promise<Record<string, unknown>> {
  if (eventOnlyData(x)) return x.data ?? {};
  if (x.triggerEventId) {
    const known = triggerNames?.get(x.triggerEventId);
    const name = known !== undefined ? known : await events.nameOf(manager, x.triggerEventId);
    if (name !== null && isReservedEventName(name)) return x.data;
  }
  return Object.fromEntries(
    Object.entries(x.data ?? {}).filter(
      ([, value]) => isPersistenceWrapper(value) && !value.persistent,
    ),
  );
}

/** The execution's data holds only the send's own values (`{value, persistent: false}`): the trigger's name does not matter. */
export function eventOnlyData(x: WorkflowExecution): boolean {
  return Object.values(x.data ?? {}).every(
    (value) => isPersistenceWrapper(value) && !value.persistent,
  );
}
