import type { FieldError, FieldErrorCode } from '../common/errors/api-exception';
import { isPlainObject } from '../common/validation/json-text';
import {
  ClassifiedRule,
  CONTACT_COLUMN_FIELDS,
  CONTACT_OPERATORS,
  ContactColumnField,
  ContactOperator,
  ConditionRule,
  ENGAGEMENT_FIELDS,
  EVENT_OPERATORS,
  EventOperator,
  LIMITS,
  MEMBERSHIP_OPERATORS,
  MembershipOperator,
  TIME_UNITS,
} from './condition.types';

/** A membership rule found while validating; its segment is checked against the database afterwards. */
export interface SegmentReference {
  segmentId: string;
  /** Path of the rule's `value`, for the error that names it. */
  path: string;
}

export interface ShapeValidation {
  errors: FieldError[];
  segmentRefs: SegmentReference[];
}

const STRING_OPERATORS: ContactOperator[] = ['contains', 'notContains', 'startsWith', 'endsWith'];
const COMPARISON_OPERATORS: ContactOperator[] = [
  'greaterThan',
  'greaterThanOrEqual',
  'lessThan',
  'lessThanOrEqual',
];

/** Which operators each kind of field accepts; anything else is "operator not allowed for that field". */
const COLUMN_OPERATORS: Record<ContactColumnField, readonly ContactOperator[]> = {
  email: ['equals', 'notEquals', ...STRING_OPERATORS, 'in', 'notIn'],
  subscribed: ['equals', 'notEquals'],
  createdAt: ['equals', 'notEquals', ...COMPARISON_OPERATORS, 'within', 'olderThan'],
  updatedAt: ['equals', 'notEquals', ...COMPARISON_OPERATORS, 'within', 'olderThan'],
};
/** Data keys take every contact operator. */
const DATA_OPERATORS: readonly ContactOperator[] = CONTACT_OPERATORS;

const FIELD_HINT =
  'email, subscribed, createdAt, updatedAt, data.<key>, event.<name>, email.sent, email.opened, email.clicked, email.bounced, email.complained, email.delayed or segment';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_DATE_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses the ISO 8601 dates the language accepts (`2024-05-01`,
 * `2024-05-01T10:00:00Z`, `2024-05-01T10:00:00+02:00`). A date or time
 * without an offset is UTC. Impossible dates (`2024-02-30`) are rejected
 * rather than rolled over.
 */
export function parseIsoDate(value: string): Date | null {
  const m = ISO_DATE_RE.exec(value);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  if (year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59)
    return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return null;
  const offset = m[8];
  if (offset && offset.toUpperCase() !== 'Z') {
    const [oh, om] = [Number(offset.slice(1, 3)), Number(offset.replace(':', '').slice(3) || 0)];
    if (oh > 15 || om > 59) return null;
  }
  const normalised =
    m[4] === undefined
      ? `${m[1]}-${m[2]}-${m[3]}T00:00:00Z`
      : offset
        ? value.replace(' ', 'T')
        : `${value.replace(' ', 'T')}Z`;
  const time = Date.parse(normalised);
  return Number.isNaN(time) ? null : new Date(time);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Rule `field` → what it addresses, or the error describing why it addresses nothing. */
export function classifyField(
  field: string,
):
  | { kind: 'column'; field: ContactColumnField }
  | { kind: 'data'; path: string[] }
  | { kind: 'event'; eventName: string }
  | { kind: 'segment' }
  | { error: string; code: FieldErrorCode } {
  if ((CONTACT_COLUMN_FIELDS as readonly string[]).includes(field)) {
    return { kind: 'column', field: field as ContactColumnField };
  }
  if ((ENGAGEMENT_FIELDS as readonly string[]).includes(field))
    return { kind: 'event', eventName: field };
  if (field === 'segment') return { kind: 'segment' };
  if (field.startsWith('data.')) {
    const path = field.slice('data.'.length).split('.');
    if (path.some((key) => key.length === 0)) {
      return {
        error: `"${field}" has an empty key; write data.<key>[.<key>…]`,
        code: 'invalid_string',
      };
    }
    if (path.length > LIMITS.maxDataPathKeys) {
      return { error: `A data path has at most ${LIMITS.maxDataPathKeys} keys`, code: 'too_big' };
    }
    if (path.some((key) => key.length > LIMITS.maxDataKeyLength)) {
      return {
        error: `A data key has at most ${LIMITS.maxDataKeyLength} characters`,
        code: 'too_big',
      };
    }
    return { kind: 'data', path };
  }
  if (field.startsWith('event.')) {
    const eventName = field.slice('event.'.length);
    if (eventName.length === 0)
      return { error: 'event.<name> needs an event name', code: 'invalid_string' };
    if (eventName.length > LIMITS.maxEventNameLength) {
      return {
        error: `An event name has at most ${LIMITS.maxEventNameLength} characters`,
        code: 'too_big',
      };
    }
    return { kind: 'event', eventName };
  }
  return { error: `Unknown field "${field}"; use ${FIELD_HINT}`, code: 'invalid_enum_value' };
}

/**
 * Turns a rule that passed validateConditionShape() into what the compiler
 * works from. Throws on a rule that was never validated: that is a bug.
 */
export function classifyRule(rule: ConditionRule): ClassifiedRule {
  const field = classifyField(rule.field);
  if ('error' in field) throw new Error(`Unvalidated condition rule: ${field.error}`);
  switch (field.kind) {
    case 'column':
      return {
        kind: 'column',
        field: field.field,
        operator: rule.operator as ContactOperator,
        value: rule.value,
      };
    case 'data':
      return {
        kind: 'data',
        path: field.path,
        operator: rule.operator as ContactOperator,
        value: rule.value,
      };
    case 'event':
      return {
        kind: 'event',
        eventName: field.eventName,
        operator: rule.operator as EventOperator,
        value: rule.value,
      };
    case 'segment':
      return {
        kind: 'segment',
        segmentId: String(rule.value).toLowerCase(),
        operator: rule.operator as MembershipOperator,
      };
  }
}

/**
 * Structural validation of a condition: everything that can be decided
 * without the database. Error fields are paths below `prefix`
 * (`condition.conditions[1].operator`). Segment references are returned for
 * the caller to check (existence in the project, cycles).
 */
export function validateConditionShape(input: unknown, prefix: string): ShapeValidation {
  return new ShapeValidator(prefix).run(input);
}

class ShapeValidator {
  private readonly errors: FieldError[] = [];
  private readonly segmentRefs: SegmentReference[] = [];
  private ruleCount = 0;

  constructor(private readonly prefix: string) {}

  run(input: unknown): ShapeValidation {
    if (input === undefined || input === null) {
      this.add(
        this.prefix,
        'A condition is required: {"logic": "AND"|"OR", "conditions": [...]}',
        'required',
      );
    } else if (!isPlainObject(input) || (!('logic' in input) && !('conditions' in input))) {
      this.add(
        this.prefix,
        'A condition must be a group {"logic": "AND"|"OR", "conditions": [...]}',
        'invalid_type',
      );
    } else {
      this.group(input, this.prefix, 1);
      if (this.ruleCount > LIMITS.maxRules) {
        this.add(
          this.prefix,
          `A condition has at most ${LIMITS.maxRules} rules; this one has ${this.ruleCount}`,
          'too_big',
        );
      }
    }
    return { errors: this.errors, segmentRefs: this.segmentRefs };
  }

  private add(field: string, message: string, code: FieldErrorCode): void {
    this.errors.push({ field, message, code });
  }

  private join(path: string, key: string): string {
    return path ? `${path}.${key}` : key;
  }

  private node(node: unknown, path: string, depth: number): void {
    if (!isPlainObject(node)) {
      this.add(path, `Expected a rule or a group object, got ${typeName(node)}`, 'invalid_type');
      return;
    }
    if ('logic' in node || 'conditions' in node) this.group(node, path, depth);
    else this.rule(node, path);
  }

  private group(group: Record<string, unknown>, path: string, depth: number): void {
    if (depth > LIMITS.maxDepth) {
      this.add(path, `Groups nest at most ${LIMITS.maxDepth} levels deep`, 'too_big');
      return;
    }
    this.unknownKeys(group, ['logic', 'conditions'], path);
    const logic = group.logic;
    if (logic === undefined || logic === null) {
      this.add(this.join(path, 'logic'), 'logic is required: "AND" or "OR"', 'required');
    } else if (logic !== 'AND' && logic !== 'OR') {
      this.add(
        this.join(path, 'logic'),
        'logic must be "AND" or "OR"',
        typeof logic === 'string' ? 'invalid_enum_value' : 'invalid_type',
      );
    }
    const conditions = group.conditions;
    const conditionsPath = this.join(path, 'conditions');
    if (conditions === undefined || conditions === null) {
      this.add(conditionsPath, 'conditions is required: an array of rules and groups', 'required');
      return;
    }
    if (!Array.isArray(conditions)) {
      this.add(
        conditionsPath,
        `conditions must be an array, got ${typeName(conditions)}`,
        'invalid_type',
      );
      return;
    }
    conditions.forEach((child, index) =>
      this.node(child, `${conditionsPath}[${index}]`, depth + 1),
    );
  }

  private unknownKeys(object: Record<string, unknown>, allowed: string[], path: string): void {
    for (const key of Object.keys(object)) {
      if (!allowed.includes(key))
        this.add(this.join(path, key), `Unrecognized key "${key}"`, 'unrecognized_keys');
    }
  }

  private rule(rule: Record<string, unknown>, path: string): void {
    this.ruleCount += 1;
    this.unknownKeys(rule, ['field', 'operator', 'value'], path);
    const fieldPath = this.join(path, 'field');
    const operatorPath = this.join(path, 'operator');
    const valuePath = this.join(path, 'value');
    const { field, operator, value } = rule;

    if (operator === undefined || operator === null)
      this.add(operatorPath, 'operator is required', 'required');
    else if (typeof operator !== 'string')
      this.add(operatorPath, 'operator must be a string', 'invalid_type');

    if (field === undefined || field === null) {
      this.add(fieldPath, `field is required: ${FIELD_HINT}`, 'required');
      return;
    }
    if (typeof field !== 'string') {
      this.add(fieldPath, 'field must be a string', 'invalid_type');
      return;
    }
    const target = classifyField(field);
    if ('error' in target) {
      this.add(fieldPath, target.error, target.code);
      return;
    }
    if (typeof operator !== 'string') return;

    switch (target.kind) {
      case 'column': {
        const allowed = COLUMN_OPERATORS[target.field];
        if (!this.operatorAllowed(operator, allowed, field, operatorPath)) return;
        this.columnValue(target.field, operator as ContactOperator, value, valuePath);
        return;
      }
      case 'data':
        if (!this.operatorAllowed(operator, DATA_OPERATORS, field, operatorPath)) return;
        this.dataValue(operator as ContactOperator, value, valuePath);
        return;
      case 'event':
        if (!this.operatorAllowed(operator, EVENT_OPERATORS, field, operatorPath)) return;
        this.eventValue(operator as EventOperator, value, valuePath);
        return;
      case 'segment':
        if (!this.operatorAllowed(operator, MEMBERSHIP_OPERATORS, field, operatorPath)) return;
        this.segmentValue(value, valuePath);
        return;
    }
  }

  private operatorAllowed(
    operator: string,
    allowed: readonly string[],
    field: string,
    path: string,
  ): boolean {
    if (allowed.includes(operator)) return true;
    this.add(
      path,
      `Operator "${operator}" is not allowed for field "${field}"; use one of: ${allowed.join(', ')}`,
      'invalid_enum_value',
    );
    return false;
  }

  private columnValue(
    field: ContactColumnField,
    operator: ContactOperator,
    value: unknown,
    path: string,
  ): void {
    if (operator === 'within' || operator === 'olderThan') {
      this.window(value, path, true);
      return;
    }
    if (operator === 'in' || operator === 'notIn') {
      this.list(value, path, (item) => typeof item === 'string', 'a string');
      return;
    }
    if (field === 'subscribed') {
      if (!this.present(value, path)) return;
      if (typeof value !== 'boolean')
        this.add(path, `Expected a boolean, got ${typeName(value)}`, 'invalid_type');
      return;
    }
    if (field === 'email') {
      this.string(value, path, STRING_OPERATORS.includes(operator));
      return;
    }
    this.date(value, path);
  }

  private dataValue(operator: ContactOperator, value: unknown, path: string): void {
    switch (operator) {
      case 'exists':
      case 'notExists':
        this.noValue(operator, value, path);
        return;
      case 'within':
      case 'olderThan':
        this.window(value, path, true);
        return;
      case 'in':
      case 'notIn':
        this.list(value, path, isScalar, 'a string, number or boolean');
        return;
      case 'contains':
      case 'notContains':
      case 'startsWith':
      case 'endsWith':
        this.string(value, path, true);
        return;
      case 'equals':
      case 'notEquals':
        if (value === null) {
          this.add(
            path,
            `${operator} needs a string, number or boolean; use exists / notExists for missing or null keys`,
            'invalid_type',
          );
          return;
        }
        if (!this.present(value, path)) return;
        if (!isScalar(value))
          this.add(
            path,
            `Expected a string, number or boolean, got ${typeName(value)}`,
            'invalid_type',
          );
        else if (typeof value === 'string' && value.length > LIMITS.maxStringLength)
          this.tooLong(path);
        return;
      default:
        // The comparisons: numbers compare as numbers, ISO dates as instants; other strings have no order here.
        if (!this.present(value, path)) return;
        if (typeof value === 'number') {
          if (!Number.isFinite(value)) this.add(path, 'Expected a finite number', 'invalid_type');
          return;
        }
        if (typeof value === 'string') {
          if (!parseIsoDate(value))
            this.add(
              path,
              `${operator} compares numbers or ISO 8601 dates; "${truncate(value)}" is neither`,
              'invalid_string',
            );
          return;
        }
        this.add(
          path,
          `Expected a number or an ISO 8601 date, got ${typeName(value)}`,
          'invalid_type',
        );
    }
  }

  private eventValue(operator: EventOperator, value: unknown, path: string): void {
    switch (operator) {
      case 'triggered':
      case 'notTriggered':
        this.noValue(operator, value, path);
        return;
      case 'triggeredWithin':
      case 'notTriggeredWithin':
        this.window(value, path, true);
        return;
      case 'triggeredAtLeast': {
        if (!this.present(value, path)) return;
        if (!isPlainObject(value)) {
          this.add(
            path,
            `Expected {count, amount?, unit?}, got ${typeName(value)}`,
            'invalid_type',
          );
          return;
        }
        this.unknownKeys(value, ['count', 'amount', 'unit'], path);
        this.integer(value.count, `${path}.count`, 1, LIMITS.maxEventCount);
        const hasAmount = value.amount !== undefined && value.amount !== null;
        const hasUnit = value.unit !== undefined && value.unit !== null;
        if (hasAmount || hasUnit)
          this.window({ amount: value.amount, unit: value.unit }, path, false);
      }
    }
  }

  private segmentValue(value: unknown, path: string): void {
    if (!this.present(value, path)) return;
    if (typeof value !== 'string') {
      this.add(path, `Expected a segment id, got ${typeName(value)}`, 'invalid_type');
      return;
    }
    if (!UUID_RE.test(value)) {
      this.add(path, `"${truncate(value)}" is not a segment id`, 'invalid_string');
      return;
    }
    this.segmentRefs.push({ segmentId: value.toLowerCase(), path });
  }

  private noValue(operator: string, value: unknown, path: string): void {
    if (value !== undefined && value !== null)
      this.add(path, `${operator} takes no value`, 'invalid_type');
  }

  private present(value: unknown, path: string): boolean {
    if (value !== undefined && value !== null) return true;
    this.add(path, 'value is required for this operator', 'required');
    return false;
  }

  private tooLong(path: string): void {
    this.add(path, `A value has at most ${LIMITS.maxStringLength} characters`, 'too_big');
  }

  private string(value: unknown, path: string, nonEmpty: boolean): void {
    if (!this.present(value, path)) return;
    if (typeof value !== 'string') {
      this.add(path, `Expected a string, got ${typeName(value)}`, 'invalid_type');
    } else if (nonEmpty && value.length === 0) {
      this.add(path, 'The value must not be empty', 'too_small');
    } else if (value.length > LIMITS.maxStringLength) {
      this.tooLong(path);
    }
  }

  private date(value: unknown, path: string): void {
    if (!this.present(value, path)) return;
    if (typeof value !== 'string') {
      this.add(path, `Expected an ISO 8601 date string, got ${typeName(value)}`, 'invalid_type');
    } else if (!parseIsoDate(value)) {
      this.add(path, `"${truncate(value)}" is not an ISO 8601 date`, 'invalid_string');
    }
  }

  private list(
    value: unknown,
    path: string,
    accepts: (item: unknown) => boolean,
    expected: string,
  ): void {
    if (!this.present(value, path)) return;
    if (!Array.isArray(value)) {
      this.add(path, `Expected an array, got ${typeName(value)}`, 'invalid_type');
      return;
    }
    if (value.length === 0) {
      this.add(path, 'The list must not be empty', 'too_small');
      return;
    }
    if (value.length > LIMITS.maxInValues) {
      this.add(path, `A list has at most ${LIMITS.maxInValues} values`, 'too_big');
      return;
    }
    value.forEach((item, index) => {
      if (!accepts(item))
        this.add(
          `${path}[${index}]`,
          `Expected ${expected}, got ${typeName(item)}`,
          'invalid_type',
        );
      else if (typeof item === 'string' && item.length > LIMITS.maxStringLength)
        this.tooLong(`${path}[${index}]`);
    });
  }

  private integer(value: unknown, path: string, min: number, max: number): void {
    if (!this.present(value, path)) return;
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      this.add(path, `Expected an integer, got ${typeName(value)}`, 'invalid_type');
    } else if (value < min) {
      this.add(path, `Must be at least ${min}`, 'too_small');
    } else if (value > max) {
      this.add(path, `Must be at most ${max}`, 'too_big');
    }
  }

  /** `{amount, unit}`; `strict` rejects other keys (triggeredAtLeast shares its object with `count`). */
  private window(value: unknown, path: string, strict: boolean): void {
    if (!this.present(value, path)) return;
    if (!isPlainObject(value)) {
      this.add(path, `Expected {amount, unit}, got ${typeName(value)}`, 'invalid_type');
      return;
    }
    if (strict) this.unknownKeys(value, ['amount', 'unit'], path);
    this.integer(value.amount, `${path}.amount`, 1, LIMITS.maxWindowAmount);
    const unit = value.unit;
    if (unit === undefined || unit === null) {
      this.add(`${path}.unit`, 'unit is required: minutes, hours or days', 'required');
    } else if (!(TIME_UNITS as readonly unknown[]).includes(unit)) {
      this.add(
        `${path}.unit`,
        'unit must be minutes, hours or days',
        typeof unit === 'string' ? 'invalid_enum_value' : 'invalid_type',
      );
    }
  }
}

function isScalar(value: unknown): value is string | number | boolean {
  return (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

function truncate(value: string): string {
  return value.length > 60 ? `${value.slice(0, 57)}...` : value;
}
