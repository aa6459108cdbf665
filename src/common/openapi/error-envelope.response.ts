import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import type { FieldErrorCode } from '../errors/api-exception';

/** Every field code the API emits (contract section 2); the type check keeps it in step with FieldErrorCode. */
export const FIELD_ERROR_CODES = [
  'required',
  'invalid_type',
  'invalid_string',
  'invalid_enum_value',
  'too_small',
  'too_big',
  'unrecognized_keys',
  'invalid_template',
  'reserved_event',
  'custom',
] as const satisfies readonly FieldErrorCode[];
// The reverse direction: a new FieldErrorCode missing above is a compile error here.
type MissingFieldCodes = Exclude<FieldErrorCode, (typeof FIELD_ERROR_CODES)[number]>;
const everyFieldCodeListed: [MissingFieldCodes] extends [never] ? true : never = true;
void everyFieldCodeListed;

@ApiSchema({ name: 'FieldError', description: 'One problem of one field or parameter' })
export class FieldErrorResponse {
  @ApiProperty({
    example: 'to[1].email',
    description:
      'Dotted path with indexes into the body, or the name of the query or path parameter',
  })
  field: string;

  @ApiProperty({ example: 'email must be a valid email address' })
  message: string;

  @ApiProperty({ enum: FIELD_ERROR_CODES, enumName: 'FieldErrorCode' })
  code: FieldErrorCode;
}

@ApiSchema({ name: 'ErrorDetail' })
export class ErrorDetailResponse {
  @ApiProperty({
    example: 'VALIDATION_ERROR',
    description:
      'BAD_REQUEST, MISSING_API_KEY, INVALID_API_KEY, FORBIDDEN, PROJECT_DISABLED, DOMAIN_NOT_VERIFIED, SENDING_PAUSED, ' +
      '<RESOURCE>_NOT_FOUND, ROUTE_NOT_FOUND, CONFLICT, IDEMPOTENCY_KEY_REUSED, PAYLOAD_TOO_LARGE, ' +
      'VALIDATION_ERROR, RATE_LIMIT_EXCEEDED, INTERNAL_ERROR',
  })
  code: string;

  @ApiProperty({ example: 'Validation failed' })
  message: string;

  @ApiProperty({ type: 'integer', example: 422, description: 'The HTTP status of the response' })
  statusCode: number;

  @ApiProperty({
    description: 'Also in the X-Request-Id response header and in the server log line',
  })
  requestId: string;

  @ApiPropertyOptional({
    type: [FieldErrorResponse],
    description: 'Per-field problems: body fields on 422, the query or path parameter on 400',
  })
  errors?: FieldErrorResponse[];

  @ApiProperty({ minLength: 1, description: 'What to do about it; never empty' })
  suggestion: string;
}

/** The body of every error response (src/common/errors/all-exceptions.filter.ts). */
@ApiSchema({ name: 'ErrorEnvelope' })
export class ErrorEnvelopeResponse {
  @ApiProperty({ type: 'boolean', enum: [false] })
  success: false;

  @ApiProperty({ description: 'The same text as error.message (read by the Plunk SDKs)' })
  message: string;

  @ApiProperty({ type: ErrorDetailResponse })
  error: ErrorDetailResponse;

  @ApiProperty({ format: 'date-time' })
  timestamp: string;
}

/** `data` of every DELETE: the id and `deleted: true`. */
@ApiSchema({ name: 'Deleted' })
export class DeletedResponse {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ type: 'boolean', enum: [true] })
  deleted: true;
}
