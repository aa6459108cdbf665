import { registerDecorator, ValidationArguments, ValidationOptions } from 'class-validator';

/**
 * One custom class-validator rule as a property decorator. `name` is what
 * validation-errors.ts maps to the field code (CONSTRAINT_CODES); `options`
 * may override the message.
 */
export function constraint(
  name: string,
  message: string | ((args: ValidationArguments) => string),
  validate: (value: unknown) => boolean,
  options?: ValidationOptions,
): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message, ...options },
      validator: { validate },
    });
}
