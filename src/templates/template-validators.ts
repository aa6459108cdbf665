import { registerDecorator, ValidationArguments, ValidationOptions } from 'class-validator';
import { TemplateRenderer } from './template-renderer';

const parser = new TemplateRenderer();

/** Liquid that parses (constraint name maps to the `invalid_template` field code). */
export function IsLiquidTemplate(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isLiquidTemplate',
      target: target.constructor,
      propertyName: String(propertyName),
      options,
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || parser.validate(value) === null,
        defaultMessage: (args: ValidationArguments) =>
          `${args.property} is not valid Liquid: ${typeof args.value === 'string' ? parser.validate(args.value) : ''}`,
      },
    });
  };
}

/** No CR or LF: header injection guard for subjects and header values. */
export function NoLineBreaks(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'noLineBreaks',
      target: target.constructor,
      propertyName: String(propertyName),
      options,
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !/[\r\n]/.test(value),
        defaultMessage: (args: ValidationArguments) => `${args.property} must not contain line breaks`,
      },
    });
  };
}
