import { ValidationOptions } from 'class-validator';
import { constraint } from '../common/validation/constraint';
import { TemplateRenderer } from './template-renderer';

const parser = new TemplateRenderer();

/** Liquid that parses (constraint name maps to the `invalid_template` field code). */
export function IsLiquidTemplate(options?: ValidationOptions): PropertyDecorator {
  return constraint(
    'isLiquidTemplate',
    (args) => `${args.property} is not valid Liquid: ${typeof args.value === 'string' ? parser.validate(args.value) : ''}`,
    (value) => typeof value !== 'string' || parser.validate(value) === null,
    options,
  );
}
