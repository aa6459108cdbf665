import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import {
  IsString,
  MaxLength,
  registerDecorator,
  ValidationArguments,
  ValidationOptions,
} from 'class-validator';
import { NoLineBreaks, NotBlank } from '../common/validation/validators';
import { LiquidSandbox } from './liquid-sandbox';
import { parseOffload } from './parse-offload';
import { INLINE_PARSE_CHARS } from './template-renderer';

const parser = new LiquidSandbox();

/** Each validated object's parse errors by property, for the message (parsed once, not twice). */
const parseErrors = new WeakMap<object, Map<string, string>>();

function recordParse(args: ValidationArguments, error: string | null): boolean {
  if (error === null) return true;
  const errors = parseErrors.get(args.object) ?? new Map<string, string>();
  errors.set(args.property, error);
  parseErrors.set(args.object, errors);
  return false;
}

/**
 * Liquid that parses (constraint name maps to the `invalid_template` field code). A long source
 * is parsed on a render thread when this process has a renderer (parse-offload.ts).
 */
export function IsLiquidTemplate(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isLiquidTemplate',
      target: target.constructor,
      propertyName: String(propertyName),
      options: {
        message: (args: ValidationArguments) =>
          `${args.property} is not valid Liquid: ${parseErrors.get(args.object)?.get(args.property) ?? ''}`,
        ...options,
      },
      validator: {
        validate(value: unknown, args: ValidationArguments): boolean | Promise<boolean> {
          if (typeof value !== 'string') return true;
          const offload = value.length > INLINE_PARSE_CHARS ? parseOffload() : undefined;
          if (!offload) return recordParse(args, parser.validate(value));
          return offload(value).then((error) => recordParse(args, error));
        },
      },
    });
}

/** A subject in Liquid (templates, campaigns): one line, not blank, at most 998 characters, parses. */
export function LiquidSubjectField(example?: string): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      description: 'Liquid; no line breaks; not only whitespace',
      maxLength: 998,
      example,
    }),
    IsString(),
    NotBlank(),
    MaxLength(998),
    NoLineBreaks(),
    IsLiquidTemplate(),
  );
}

/** An HTML body in Liquid (templates, campaigns): not blank, at most 1,000,000 characters, parses. */
export function LiquidBodyField(): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      description: 'HTML with Liquid (the template render context); not only whitespace',
      maxLength: 1_000_000,
    }),
    IsString(),
    NotBlank(),
    MaxLength(1_000_000),
    IsLiquidTemplate(),
  );
}
