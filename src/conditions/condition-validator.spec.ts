import { parseIsoDate, validateConditionShape } from './condition-validator';

function errorsOf(condition: unknown, prefix = 'condition') {
  return validateConditionShape(condition, prefix).errors.map(({ field, code }) => ({
    field,
    code,
  }));
}

function one(field: string, operator: string, value?: unknown) {
  return {
    logic: 'AND',
    conditions: [value === undefined ? { field, operator } : { field, operator, value }],
  };
}

const SEGMENT_ID = '01936f5e-8c1a-7b3e-9a2b-3c4d5e6f7a8b';

describe('validateConditionShape', () => {
  it('accepts every documented form', () => {
    const condition = {
      logic: 'OR',
      conditions: [
        { field: 'email', operator: 'endsWith', value: '@acme.com' },
        { field: 'subscribed', operator: 'equals', value: true },
        { field: 'createdAt', operator: 'within', value: { amount: 7, unit: 'days' } },
        { field: 'updatedAt', operator: 'greaterThan', value: '2024-01-01T00:00:00Z' },
        { field: 'data.plan', operator: 'in', value: ['pro', 'team', 3] },
        { field: 'data.address.city', operator: 'exists' },
        { field: 'data.age', operator: 'greaterThanOrEqual', value: 18 },
        {
          field: 'event.purchase',
          operator: 'triggeredAtLeast',
          value: { count: 2, amount: 30, unit: 'days' },
        },
        {
          field: 'event.signup',
          operator: 'notTriggeredWithin',
          value: { amount: 2, unit: 'hours' },
        },
        { field: 'email.opened', operator: 'triggered' },
        { logic: 'AND', conditions: [{ field: 'segment', operator: 'notIn', value: SEGMENT_ID }] },
      ],
    };
    const result = validateConditionShape(condition, 'condition');
    expect(result.errors).toEqual([]);
    expect(result.segmentRefs).toEqual([
      { segmentId: SEGMENT_ID, path: 'condition.conditions[10].conditions[0].value' },
    ]);
  });

  it('requires a group at the root', () => {
    expect(errorsOf(undefined)).toEqual([{ field: 'condition', code: 'required' }]);
    expect(errorsOf({ field: 'email', operator: 'equals', value: 'a' })).toEqual([
      { field: 'condition', code: 'invalid_type' },
    ]);
    expect(errorsOf([])).toEqual([{ field: 'condition', code: 'invalid_type' }]);
  });

  it('checks logic and conditions of every group', () => {
    expect(errorsOf({ logic: 'XOR', conditions: [] })).toEqual([
      { field: 'condition.logic', code: 'invalid_enum_value' },
    ]);
    expect(errorsOf({ conditions: [] })).toEqual([{ field: 'condition.logic', code: 'required' }]);
    expect(errorsOf({ logic: 'AND', conditions: {} })).toEqual([
      { field: 'condition.conditions', code: 'invalid_type' },
    ]);
    expect(errorsOf({ logic: 'AND', conditions: [42], extra: 1 })).toEqual([
      { field: 'condition.extra', code: 'unrecognized_keys' },
      { field: 'condition.conditions[0]', code: 'invalid_type' },
    ]);
  });

  it('points at the exact rule in nested groups', () => {
    const condition = {
      logic: 'AND',
      conditions: [
        { field: 'email', operator: 'equals', value: 'a@b.c' },
        { logic: 'OR', conditions: [{ field: 'subscribed', operator: 'contains', value: 'x' }] },
      ],
    };
    expect(errorsOf(condition)).toEqual([
      { field: 'condition.conditions[1].conditions[0].operator', code: 'invalid_enum_value' },
    ]);
    expect(errorsOf(condition, 'audienceFilter')).toEqual([
      { field: 'audienceFilter.conditions[1].conditions[0].operator', code: 'invalid_enum_value' },
    ]);
  });

  it('rejects unknown fields and malformed paths', () => {
    expect(errorsOf(one('phone', 'equals', 'x'))).toEqual([
      { field: 'condition.conditions[0].field', code: 'invalid_enum_value' },
    ]);
    expect(errorsOf(one('data.', 'exists'))).toEqual([
      { field: 'condition.conditions[0].field', code: 'invalid_string' },
    ]);
    expect(errorsOf(one('data.a..b', 'exists'))).toEqual([
      { field: 'condition.conditions[0].field', code: 'invalid_string' },
    ]);
    expect(errorsOf(one('event.', 'triggered'))).toEqual([
      { field: 'condition.conditions[0].field', code: 'invalid_string' },
    ]);
    expect(errorsOf(one(`event.${'x'.repeat(101)}`, 'triggered'))).toEqual([
      { field: 'condition.conditions[0].field', code: 'too_big' },
    ]);
    expect(errorsOf(one('email.delivered', 'triggered'))).toEqual([
      { field: 'condition.conditions[0].field', code: 'invalid_enum_value' },
    ]);
    expect(errorsOf({ logic: 'AND', conditions: [{ operator: 'exists' }] })).toEqual([
      { field: 'condition.conditions[0].field', code: 'required' },
    ]);
    expect(errorsOf({ logic: 'AND', conditions: [{ field: 'email', value: 'x', op: 1 }] })).toEqual(
      [
        { field: 'condition.conditions[0].op', code: 'unrecognized_keys' },
        { field: 'condition.conditions[0].operator', code: 'required' },
      ],
    );
  });

  it.each([
    ['subscribed', 'greaterThan', true],
    ['email', 'greaterThan', 'a'],
    ['email', 'within', { amount: 1, unit: 'days' }],
    ['createdAt', 'contains', '2024'],
    ['data.plan', 'triggered', undefined],
    ['event.purchase', 'equals', 'x'],
    ['email.opened', 'within', { amount: 1, unit: 'days' }],
    ['segment', 'equals', SEGMENT_ID],
  ])('refuses operator: %s %s', (field, operator, value) => {
    expect(errorsOf(one(field, operator, value))).toEqual([
      { field: 'condition.conditions[0].operator', code: 'invalid_enum_value' },
    ]);
  });

  it.each([
    ['subscribed', 'equals', 'yes', 'value', 'invalid_type'],
    ['email', 'equals', 42, 'value', 'invalid_type'],
    ['email', 'contains', '', 'value', 'too_small'],
    ['email', 'in', 'a@b.c', 'value', 'invalid_type'],
    ['email', 'in', [], 'value', 'too_small'],
    ['email', 'in', ['a@b.c', 7], 'value[1]', 'invalid_type'],
    ['createdAt', 'greaterThan', 'yesterday', 'value', 'invalid_string'],
    ['createdAt', 'greaterThan', '2024-02-30', 'value', 'invalid_string'],
    ['createdAt', 'lessThan', 1700000000, 'value', 'invalid_type'],
    ['createdAt', 'within', 7, 'value', 'invalid_type'],
    ['createdAt', 'within', { amount: 0, unit: 'days' }, 'value.amount', 'too_small'],
    ['createdAt', 'within', { amount: 1.5, unit: 'days' }, 'value.amount', 'invalid_type'],
    ['createdAt', 'within', { amount: 1, unit: 'weeks' }, 'value.unit', 'invalid_enum_value'],
    ['createdAt', 'within', { amount: 1 }, 'value.unit', 'required'],
    ['createdAt', 'within', { amount: 1, unit: 'days', tz: 'x' }, 'value.tz', 'unrecognized_keys'],
    ['data.plan', 'equals', null, 'value', 'invalid_type'],
    ['data.plan', 'equals', undefined, 'value', 'required'],
    ['data.plan', 'equals', { a: 1 }, 'value', 'invalid_type'],
    ['data.plan', 'equals', 'x'.repeat(1001), 'value', 'too_big'],
    ['data.age', 'greaterThan', 'ten', 'value', 'invalid_string'],
    ['data.age', 'greaterThan', true, 'value', 'invalid_type'],
    ['data.plan', 'exists', 'x', 'value', 'invalid_type'],
    ['data.plan', 'in', [{}], 'value[0]', 'invalid_type'],
    ['data.plan', 'in', new Array(1001).fill('x'), 'value', 'too_big'],
    ['event.purchase', 'triggered', 3, 'value', 'invalid_type'],
    ['event.purchase', 'triggeredWithin', undefined, 'value', 'required'],
    ['event.purchase', 'triggeredAtLeast', { amount: 3, unit: 'days' }, 'value.count', 'required'],
    ['event.purchase', 'triggeredAtLeast', { count: 0 }, 'value.count', 'too_small'],
    ['event.purchase', 'triggeredAtLeast', { count: 2, amount: 3 }, 'value.unit', 'required'],
    ['event.purchase', 'triggeredAtLeast', { count: 2, unit: 'days' }, 'value.amount', 'required'],
    ['segment', 'in', 42, 'value', 'invalid_type'],
    ['segment', 'in', 'not-a-uuid', 'value', 'invalid_string'],
  ])('refuses value: %s %s %j', (field, operator, value, path, code) => {
    expect(errorsOf(one(field, operator, value))).toEqual([
      { field: `condition.conditions[0].${path}`, code },
    ]);
  });

  it('allows five levels of groups and refuses the sixth', () => {
    const leaf = { field: 'subscribed', operator: 'equals', value: true };
    const nest = (levels: number): unknown =>
      levels === 1
        ? { logic: 'AND', conditions: [leaf] }
        : { logic: 'OR', conditions: [nest(levels - 1)] };
    expect(errorsOf(nest(5))).toEqual([]);
    expect(errorsOf(nest(6))).toEqual([
      {
        field: 'condition.conditions[0].conditions[0].conditions[0].conditions[0].conditions[0]',
        code: 'too_big',
      },
    ]);
  });

  it('allows 50 rules and refuses 51', () => {
    const rules = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ field: `data.k${i}`, operator: 'exists' }));
    expect(errorsOf({ logic: 'AND', conditions: rules(50) })).toEqual([]);
    expect(
      errorsOf({ logic: 'AND', conditions: [{ logic: 'OR', conditions: rules(51) }] }),
    ).toEqual([{ field: 'condition', code: 'too_big' }]);
  });
});

describe('parseIsoDate', () => {
  it.each([
    ['2024-01-15', '2024-01-15T00:00:00.000Z'],
    ['2024-01-15T10:30', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T10:30:00+02:00', '2024-01-15T08:30:00.000Z'],
    ['2024-02-29T23:59:59.5Z', '2024-02-29T23:59:59.500Z'],
  ])('%s is %s', (input, iso) => {
    expect(parseIsoDate(input)?.toISOString()).toBe(iso);
  });

  it.each([
    '2023-02-29',
    '2024-13-01',
    '2024-01-01T24:00',
    'yesterday',
    '1700000000',
    '0000-01-01',
    '2024-01-01T10:00+16:00',
  ])('refuses %s', (input) => {
    expect(parseIsoDate(input)).toBeNull();
  });
});
