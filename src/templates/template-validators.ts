import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsString, MaxLength, ValidationOptions } from 'class-validator';
import { constraint } from '../common/validation/constraint';
import { NoLineBreaks, NotBlank } from '../common/validation/validators';
import { LiquidSandbox } from './liquid-sandbox';

const parser = new LiquidSandbox();

/** Liquid that parses (constraint name maps to the `invalid_template` field code). */
export function IsLiquidTemplate(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'isLiquidTemplate',
    (args) =>
      `${args.property} is not valid Liquid: ${typeof args.value === 'string' ? parser.validate(args.value) : ''}`,
    (value) => typeof value !== 'string' || parser.validate(value) === null,
    options,
  );
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
