import { ValidationOptions } from 'class-validator';
import { constraint } from '../../common/validation/constraint';
import { isReservedEventName, RESERVED_EVENT_PREFIXES } from '../event-names';

const RESERVED_LIST = RESERVED_EVENT_PREFIXES.map((prefix) => `"${prefix}"`).join(', ');

/** Names starting with a prefix of RESERVED_EVENT_PREFIXES belong to the system; constraint → `reserved_event`. */
export function NotReservedEvent(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'notReservedEvent',
    `$property must not start with ${RESERVED_LIST} (reserved for system events)`,
    (value) => typeof value !== 'string' || !isReservedEventName(value),
    options,
  );
}
