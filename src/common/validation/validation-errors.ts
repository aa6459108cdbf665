import { ValidationError } from 'class-validator';
import { FieldError, FieldErrorCode } from '../errors/api-exception';

/** Where the failed value came from: body problems are 422, query and path problems 400. */
export type ValidationLocation = 'body' | 'query' | 'param' | 'custom';

/** Thrown by the global ValidationPipe; the exception filter renders it. */
export class RequestValidationException extends Error {
  constructor(
    public readonly validationErrors: ValidationError[],
    public location: ValidationLocation = 'body',
  ) {
    super('Validation failed');
    this.name = 'RequestValidationException';
  }
}

/** class-validator constraint name → the contract's field code. */
const CONSTRAINT_CODES: Record<string, FieldErrorCode> = {
  whitelistValidation: 'unrecognized_keys',
  isDefined: 'required',
  isNotEmpty: 'too_small',
  isString: 'invalid_type',
  isBoolean: 'invalid_type',
  isInt: 'invalid_type',
  isNumber: 'invalid_type',
  isObject: 'invalid_type',
  isArray: 'invalid_type',
  isPlainObject: 'invalid_type',
  nestedValidation: 'invalid_type',
  isEmail: 'invalid_string',
  isUrl: 'invalid_string',
  // class-validator's constraint names, exactly as it spells them.
  isUuid: 'invalid_string',
  isDateString: 'invalid_string',
  isIso8601: 'invalid_string',
  isFqdn: 'invalid_string',
  matches: 'invalid_string',
  isBase64: 'invalid_string',
  noLineBreaks: 'invalid_string',
  isEnum: 'invalid_enum_value',
  isIn: 'invalid_enum_value',
  minLength: 'too_small',
  min: 'too_small',
  arrayMinSize: 'too_small',
  arrayNotEmpty: 'too_small',
  maxLength: 'too_big',
  max: 'too_big',
  arrayMaxSize: 'too_big',
  maxJsonSize: 'too_big',
  isLiquidTemplate: 'invalid_template',
  notReservedEvent: 'reserved_event',
};

/** Type checks win over format checks: "expected a string" is the useful message for 42. */
const PRIORITY: FieldErrorCode[] = [
  'unrecognized_keys',
  'required',
  'invalid_type',
  'invalid_enum_value',
  'invalid_string',
  'too_small',
  'too_big',
  'invalid_template',
  'reserved_event',
  'custom',
];

function joinPath(parent: string, property: string, parentIsArray: boolean): string {
  if (parent === '') return property;
  return parentIsArray ? `${parent}[${property}]` : `${parent}.${property}`;
}

function pickConstraint(error: ValidationError): FieldError | null {
  const constraints = error.constraints ?? {};
  const names = Object.keys(constraints);
  if (names.length === 0) return null;
  if (error.value === undefined || error.value === null) {
    if (!names.includes('whitelistValidation')) {
      const message =
        error.value === null
          ? `${error.property} must not be null`
          : `${error.property} is required`;
      return { field: '', message, code: 'required' };
    }
  }
  let best: { name: string; code: FieldErrorCode } | null = null;
  for (const name of names) {
    const code = CONSTRAINT_CODES[name] ?? 'custom';
    if (!best || PRIORITY.indexOf(code) < PRIORITY.indexOf(best.code)) best = { name, code };
  }
  const chosen = best as { name: string; code: FieldErrorCode };
  const message =
    chosen.code === 'unrecognized_keys'
      ? `Unrecognized key "${error.property}"`
      : constraints[chosen.name];
  return { field: '', message, code: chosen.code };
}

/**
 * Flattens class-validator's tree into the contract's `errors[]`: one entry per
 * failing field, with dotted paths and array indexes (`to[1].email`).
 */
export function flattenValidationErrors(
  errors: ValidationError[],
  parent = '',
  parentIsArray = false,
): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const path = joinPath(parent, error.property, parentIsArray);
    const own = pickConstraint(error);
    if (own) out.push({ ...own, field: path });
    if (error.children && error.children.length > 0) {
      out.push(...flattenValidationErrors(error.children, path, Array.isArray(error.value)));
    }
  }
  return out;
}
