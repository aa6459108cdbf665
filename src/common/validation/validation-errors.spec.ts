import { Type } from 'class-transformer';
import { IsEmail, IsIn, IsInt, IsOptional, IsString, Max, ValidateNested } from 'class-validator';
import { AppValidationPipe } from './validation.pipe';
import { flattenValidationErrors, RequestValidationException } from './validation-errors';

class Recipient {
  @IsEmail()
  email: string;

  @IsOptional()
  @IsString()
  name?: string;
}

class Body {
  @IsString()
  subject: string;

  @ValidateNested({ each: true })
  @Type(() => Recipient)
  to: Recipient[];

  @IsOptional()
  @IsIn(['html', 'markdown'])
  type?: string;

  @IsOptional()
  @IsInt()
  @Max(10)
  count?: number;
}

async function errorsFor(value: unknown) {
  const pipe = new AppValidationPipe();
  try {
    await pipe.transform(value, { type: 'body', metatype: Body });
  } catch (error) {
    expect(error).toBeInstanceOf(RequestValidationException);
    return flattenValidationErrors((error as RequestValidationException).validationErrors);
  }
  throw new Error('expected a validation failure');
}

describe('validation errors', () => {
  it('maps missing, wrong-type, enum, range and nested-array problems to dotted paths and codes', async () => {
    const errors = await errorsFor({
      to: [{ email: 'ok@example.com' }, { email: 'not-an-email' }],
      type: 'pdf',
      count: 11,
    });
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'subject', code: 'required' }),
        expect.objectContaining({ field: 'to[1].email', code: 'invalid_string' }),
        expect.objectContaining({ field: 'type', code: 'invalid_enum_value' }),
        expect.objectContaining({ field: 'count', code: 'too_big' }),
      ]),
    );
    expect(errors).toHaveLength(4);
  });

  it('prefers the type error over format errors and reports unknown keys', async () => {
    const errors = await errorsFor({ subject: 42, to: [], extra: true, nested: { a: 1 } });
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'subject', code: 'invalid_type' }),
        expect.objectContaining({ field: 'extra', code: 'unrecognized_keys' }),
        expect.objectContaining({ field: 'nested', code: 'unrecognized_keys' }),
      ]),
    );
  });

  it('reports unknown keys inside nested objects with their full path', async () => {
    const errors = await errorsFor({ subject: 's', to: [{ email: 'a@b.co', phone: '1' }] });
    expect(errors).toEqual([
      expect.objectContaining({ field: 'to[0].phone', code: 'unrecognized_keys' }),
    ]);
  });
});
