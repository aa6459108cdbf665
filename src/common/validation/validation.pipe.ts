import { ArgumentMetadata, Injectable, ValidationPipe } from '@nestjs/common';
import { ApiException } from '../errors/api-exception';
import { findJsonTextProblem, isPlainObject } from './json-text';
import { RequestValidationException, ValidationLocation } from './validation-errors';

const BASE_OPTIONS = {
  transform: true,
  whitelist: true,
  validationError: { target: false, value: true },
  exceptionFactory: (errors: import('class-validator').ValidationError[]) =>
    new RequestValidationException(errors),
} as const;

/**
 * The one global pipe. Bodies reject unknown keys (422 unrecognized_keys);
 * query strings drop unknown parameters so cache-busters do not break clients.
 * The failure records where it happened so the filter can answer 422 or 400.
 */
@Injectable()
export class AppValidationPipe extends ValidationPipe {
  private readonly lenient = new ValidationPipe({ ...BASE_OPTIONS, forbidNonWhitelisted: false });

  constructor() {
    super({ ...BASE_OPTIONS, forbidNonWhitelisted: true });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const location: ValidationLocation =
      metadata.type === 'body' || metadata.type === 'query' || metadata.type === 'param'
        ? metadata.type
        : 'custom';
    // No body at all reads as {} (every field then "required"); a JSON null, array or scalar is malformed.
    if (
      location === 'body' &&
      this.isDto(metadata) &&
      value !== undefined &&
      !isPlainObject(value)
    ) {
      throw ApiException.badRequest('The request body must be a JSON object');
    }
    // Before class-transformer walks the value: unbounded nesting would overflow its
    // recursion, and NUL or lone surrogates would reach Postgres, which refuses them.
    if ((location === 'body' && this.isDto(metadata)) || location === 'query') {
      const problem = findJsonTextProblem(value);
      if (problem) {
        throw location === 'body'
          ? ApiException.validation([problem])
          : ApiException.badRequest('Invalid query parameter', [problem]);
      }
    }
    try {
      return location === 'query'
        ? await this.lenient.transform(value, metadata)
        : await super.transform(value, metadata);
    } catch (error) {
      if (error instanceof RequestValidationException) error.location = location;
      throw error;
    }
  }

  private isDto(metadata: ArgumentMetadata): boolean {
    return !!metadata.metatype && this.toValidate(metadata);
  }
}
