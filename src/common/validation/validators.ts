import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsEmail,
  IsNotEmpty,
  IsOptional,
  IsString,
  MaxLength,
  ValidateIf,
  ValidationOptions,
} from 'class-validator';
import { constraint } from './constraint';
import { hasDotAtomLocalPart, normalizeEmail } from './email';
import { isPlainObject, jsonByteSize } from './json-text';

/* General validation decorators and transforms for DTOs of every feature. */

/**
 * Serialised size limit for free-form objects (`data`). Constraint name
 * `maxJsonSize` maps to the field code `too_big`.
 */
export function MaxJsonSize(bytes: number, options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'maxJsonSize',
    `$property must be at most ${bytes / 1024} KB as JSON`,
    (value) => value === undefined || jsonByteSize(value) <= bytes,
    options,
  );
}

/** A plain JSON object (not an array, not null). Constraint `isObject` → `invalid_type`. */
export function IsJsonObject(options?: ValidationOptions): PropertyDecorator {
  return constraint('isObject', '$property must be a JSON object', isPlainObject, options);
}

/**
 * A sender address (a string, or `{email}`) has a dot-atom local part; other shapes are left to the
 * type checks. Constraint `matches` → `invalid_string`.
 */
export function IsSenderAddress(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'matches',
    "$property must be an address with a plain local part (letters, digits and !#$%&'*+/=?^_`{|}~- with single dots), not a quoted one",
    (value) => {
      const email =
        typeof value === 'object' && value !== null ? (value as { email?: unknown }).email : value;
      return typeof email !== 'string' || hasDotAtomLocalPart(email);
    },
    options,
  );
}

/** Query-string booleans: "true"/"false" (and 1/0) become booleans; anything else stays and fails IsBoolean. */
export function toBooleanQuery({ value }: { value: unknown }): unknown {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return value;
}

/** Trims strings; leaves other types for the type check to refuse. */
export function trimString({ value }: { value: unknown }): unknown {
  return typeof value === 'string' ? value.trim() : value;
}

/** Addresses (send recipients, template senders): normalizeEmail; other types stay for the type check to refuse. */
export function toNormalizedEmail({ value }: { value: unknown }): unknown {
  return typeof value === 'string' ? normalizeEmail(value) : value;
}

/**
 * Free-form `data` is taken exactly as parsed. Without this, class-transformer
 * rebuilds nested objects and silently drops keys named like Object.prototype
 * members ("constructor", "toString", "valueOf"…).
 */
export function rawJsonValue({ obj, key }: { obj: Record<string, unknown>; key: string }): unknown {
  return obj[key];
}

/**
 * Identifiers (event names) are one line of printable text: no C0 control
 * characters (CR, LF, TAB, NUL…) or DEL. Constraint `noLineBreaks` → `invalid_string`.
 */
export function NoControlCharacters(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'noLineBreaks',
    '$property must not contain control characters such as CR, LF, TAB or NUL',
    // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
    (value) => typeof value !== 'string' || !/[\u0000-\u001f\u007f]/.test(value),
    options,
  );
}

/** No CR or LF: header injection guard for subjects and header values. */
export function NoLineBreaks(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'noLineBreaks',
    '$property must not contain line breaks',
    (value) => typeof value !== 'string' || !/[\r\n]/.test(value),
    options,
  );
}

/**
 * An optional body field that is not nullable: absent leaves it (or takes the
 * default), `null` is a 422 `required` ("… must not be null"), never "no
 * change" and never a NOT NULL violation. `@IsOptional()` lets null through:
 * keep it for fields where null clears the value, documented `nullable: true`
 * (a template's `from`, a segment's `description`); docs/bad-input.md.
 */
export function OptionalNotNull(): PropertyDecorator {
  return applyDecorators(
    ValidateIf((_object: object, value: unknown) => value !== undefined),
    constraint('isDefined', '$property must not be null', (value) => value !== null),
  );
}

/**
 * Text that must say something: not empty and not only whitespace (names,
 * subjects, bodies, event names, file names). Stored as given; names are
 * trimmed before by their own Transform. Constraint `isNotEmpty` → `too_small`.
 */
export function NotBlank(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'isNotEmpty',
    '$property must not be empty or only whitespace',
    (value) => typeof value !== 'string' || value.trim().length > 0,
    options,
  );
}

/** Longest resource name (templates, segments, projects) and display name, in characters. */
export const MAX_NAME_LENGTH = 200;

/**
 * A resource's name (templates, segments, projects): trimmed, then 1..200
 * characters. On an update (`optional`) it may be left out, but null is a 422.
 */
export function NameField(
  options: { optional?: boolean; example?: string } = {},
): PropertyDecorator {
  const doc = { maxLength: MAX_NAME_LENGTH, example: options.example };
  return applyDecorators(
    ...(options.optional ? [ApiPropertyOptional(doc), OptionalNotNull()] : [ApiProperty(doc)]),
    Transform(trimString),
    IsString(),
    IsNotEmpty(),
    MaxLength(MAX_NAME_LENGTH),
  );
}

/**
 * A sender's display name (`from.name`, `name` on a send): optional, not null,
 * not blank, at most 200 characters, one line (it goes into a header).
 */
export function DisplayNameField(description?: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, description }),
    OptionalNotNull(),
    IsString(),
    NotBlank(),
    MaxLength(MAX_NAME_LENGTH),
    NoLineBreaks(),
  );
}

/**
 * A stored sender's display name that null clears (a template's or a
 * campaign's `fromName`): optional, nullable, not blank, at most 200
 * characters, one line.
 */
export function NullableDisplayNameField(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: String, maxLength: MAX_NAME_LENGTH, nullable: true }),
    IsOptional(),
    IsString(),
    NotBlank(),
    MaxLength(MAX_NAME_LENGTH),
    NoLineBreaks(),
  );
}

/** An optional address that null clears (`replyTo`): normalised, at most 320 characters. */
export function NullableEmailField(description?: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: String, format: 'email', nullable: true, description }),
    IsOptional(),
    Transform(toNormalizedEmail),
    IsEmail(),
    MaxLength(320),
  );
}
