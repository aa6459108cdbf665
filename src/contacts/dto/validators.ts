import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsString, MaxLength, ValidationOptions } from 'class-validator';
import { constraint } from '../../common/validation/constraint';
import { isValidEmail } from '../../common/validation/email';
import {
  IsJsonObject,
  MaxJsonSize,
  OptionalNotNull,
  rawJsonValue,
  trimString,
} from '../../common/validation/validators';
import { MAX_CONTACT_DATA_BYTES } from '../contact-data';

/** The contacts feature's email rule; constraint `isEmail` → `invalid_string`. */
export function IsContactEmail(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'isEmail',
    '$property must be a valid email address',
    (value) => typeof value === 'string' && isValidEmail(value),
    options,
  );
}

/** A contact's address in a request body (contacts and track): trimmed, then the feature's email rule. */
export function ContactEmailField(): PropertyDecorator {
  return applyDecorators(Transform(trimString), IsString(), MaxLength(320), IsContactEmail());
}

/** Optional free-form `data` (contacts and track): a JSON object of at most 64 KB, taken as parsed. */
export function ContactDataField(description: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: 'object', additionalProperties: true, description }),
    OptionalNotNull(),
    Transform(rawJsonValue),
    IsJsonObject(),
    MaxJsonSize(MAX_CONTACT_DATA_BYTES),
  );
}
