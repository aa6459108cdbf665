/** How a segment's `condition` is documented in OpenAPI (the condition validator checks it). */
export const CONDITION_SCHEMA = {
  type: 'object',
  additionalProperties: true,
  description:
    'A group {logic: "AND"|"OR", conditions: [rule | group, ...]}, up to 5 levels and 50 rules. ' +
    'Rules: {field, operator, value?}; see docs/segments.md for fields and operators.',
  example: {
    logic: 'AND',
    conditions: [
      { field: 'data.plan', operator: 'equals', value: 'pro' },
      { field: 'event.purchase', operator: 'triggeredWithin', value: { amount: 7, unit: 'days' } },
    ],
  },
} as const;
