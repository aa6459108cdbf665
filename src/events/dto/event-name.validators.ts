import { ValidationOptions } from 'class-validator';
import { constraint } from '../../common/validation/constraint';
import { isReservedEventName } from '../event-names';

/** Names starting `email.`, `contact.` or `segment.` belong to the system; constraint → `reserved_event`. */
export function NotReservedEvent(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'notReservedEvent',
    '$property must not start with "email.", "contact." or "segment." (reserved for system events)',
    (value) => typeof value !== 'string' || !isReservedEventName(value),
    options,
  );
}
