import { HttpException } from '@nestjs/common';

/** One field-level problem, as it appears in `error.errors[]`. */
export interface FieldError {
  field: string;
  message: string;
  code: FieldErrorCode;
}

export type FieldErrorCode =
  | 'required'
  | 'invalid_type'
  | 'invalid_string'
  | 'invalid_enum_value'
  | 'too_small'
  | 'too_big'
  | 'unrecognized_keys'
  | 'invalid_template'
  | 'reserved_event'
  | 'custom';

export interface ApiExceptionOptions {
  errors?: FieldError[];
  suggestion?: string;
  headers?: Record<string, string>;
}

/**
 * The one exception services throw for anything a client did wrong. The
 * global filter renders it as the contract's error envelope.
 */
export class ApiException extends HttpException {
  constructor(
    status: number,
    public readonly code: string,
    message: string,
    public readonly details: ApiExceptionOptions = {},
  ) {
    super(message, status);
  }

  static notFound(resource: string, id?: string): ApiException {
    const upper = resource.toUpperCase();
    return new ApiException(
      404,
      `${upper}_NOT_FOUND`,
      id ? `${capitalise(resource)} ${id} was not found` : `${capitalise(resource)} was not found`,
      {
        suggestion: `Check the ${resource} id; ids of another project are not visible with this key.`,
      },
    );
  }

  static conflict(message: string, suggestion?: string): ApiException {
    return new ApiException(409, 'CONFLICT', message, { suggestion });
  }

  static badRequest(message: string, errors?: FieldError[]): ApiException {
    return new ApiException(400, 'BAD_REQUEST', message, { errors });
  }

  static validation(errors: FieldError[], message = 'Validation failed'): ApiException {
    return new ApiException(422, 'VALIDATION_ERROR', message, { errors });
  }
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
