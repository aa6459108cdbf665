import { escapeLike } from '../database/like-pattern';
import { isApiRequest } from '../database/statement-timeout';
import { classifyRule, parseIsoDate } from './condition-validator';
import {
  ClassifiedRule,
  ConditionGroup,
  ConditionNode,
  ContactColumnField,
  ContactOperator,
  CountWindow,
  isGroupNode,
  TimeWindow,
} from './condition.types';

/** A WHERE fragment over `contacts <alias>` and the values of its $n placeholders. */
export interface CompiledCondition {
  sql: string;
  params: unknown[];
  /** How many rules of each kind were compiled, segments inlined; callers use it to pick query plans. */
  rules: { data: number; event: number };
}

export interface CompileOptions {
  projectId: string;
  /** Alias of the contacts table in the surrounding query. */
  contactAlias?: string;
  /** Placeholders already used by the surrounding query: the fragment starts at $(paramOffset + 1). */
  paramOffset?: number;
  /**
   * Conditions of the segments that membership rules may name, already
   * scoped to the project (ConditionsService loads them). A segment missing
   * from the map matches nobody.
   */
  segments?: ReadonlyMap<string, ConditionGroup>;
  /**
   * What the surrounding query does with the fragment. "rows" (default)
   * fetches some contacts (a page, one contact): per-contact index probes
   * into events are cheapest. "count" visits every contact of the project:
   * triggeredAtLeast then aggregates the events once (GROUP BY contact)
   * instead of probing a million times.
   */
  purpose?: 'rows' | 'count';
}

const ALIAS_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A JSON string holding a decimal number ("42", "-1.5", "2e3"): such strings compare numerically. */
const NUMERIC_TEXT_RE = String.raw`^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?\s*$`;

const COLUMN_SQL: Record<ContactColumnField, string> = {
  email: 'email',
  subscribed: 'subscribed',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
};

const COMPARISON_SQL: Partial<Record<ContactOperator, string>> = {
  equals: '=',
  notEquals: '<>',
  greaterThan: '>',
  greaterThanOrEqual: '>=',
  lessThan: '<',
  lessThanOrEqual: '<=',
};

/**
 * Compiles a validated condition into one SQL boolean expression over
 * `contacts <alias>`, scoped to the project. Every value, data path and
 * event name is a bound parameter; the only text spliced in is the alias,
 * SQL keywords and constants of this file.
 *
 * The fragment is two-valued as far as WHERE is concerned: a rule on a
 * missing or null data key is false, and its negation (notEquals,
 * notContains, notIn, notExists, segment notIn) is true.
 */
export function compileCondition(
  condition: ConditionGroup,
  options: CompileOptions,
): CompiledCondition {
  const alias = options.contactAlias ?? 'c';
  if (!ALIAS_RE.test(alias)) throw new Error(`Invalid contact alias "${alias}"`);
  const compiler = new Compiler(
    alias,
    options.paramOffset ?? 0,
    options.segments ?? new Map(),
    options.purpose ?? 'rows',
  );
  const project = compiler.param(options.projectId, 'uuid');
  compiler.projectParam = project;
  const body = compiler.group(condition, []);
  return {
    sql: `(${alias}.project_id = ${project} AND ${body})`,
    params: compiler.params,
    rules: { data: compiler.dataRules, event: compiler.eventRules },
  };
}

class Compiler {
  readonly params: unknown[] = [];
  projectParam = '';
  private subqueries = 0;
  dataRules = 0;
  eventRules = 0;

  constructor(
    private readonly alias: string,
    private readonly offset: number,
    private readonly segments: ReadonlyMap<string, ConditionGroup>,
    private readonly purpose: 'rows' | 'count',
  ) {}

  param(value: unknown, cast: string): string {
    this.params.push(value);
    return `$${this.offset + this.params.length}::${cast}`;
  }

  group(group: ConditionGroup, segmentStack: string[]): string {
    if (group.conditions.length === 0) return group.logic === 'AND' ? 'TRUE' : 'FALSE';
    const parts = group.conditions.map((node) => this.node(node, segmentStack));
    if (parts.length === 1) return parts[0];
    return `(${parts.join(group.logic === 'AND' ? ' AND ' : ' OR ')})`;
  }

  private node(node: ConditionNode, segmentStack: string[]): string {
    if (isGroupNode(node)) return this.group(node, segmentStack);
    const rule = classifyRule(node);
    switch (rule.kind) {
      case 'column':
        return this.column(rule.field, rule.operator, rule.value);
      case 'data':
        this.dataRules += 1;
        return this.data(rule.path, rule.operator, rule.value);
      case 'event':
        this.eventRules += 1;
        return this.event(rule.eventName, rule.operator, rule.value);
      case 'segment':
        return this.membership(rule, segmentStack);
    }
  }

  private membership(
    rule: Extract<ClassifiedRule, { kind: 'segment' }>,
    segmentStack: string[],
  ): string {
    const target = this.segments.get(rule.segmentId);
    // A deleted segment, or a cycle that validation should have refused, matches nobody.
    const inner =
      !target || segmentStack.includes(rule.segmentId)
        ? 'FALSE'
        : this.group(target, [...segmentStack, rule.segmentId]);
    return rule.operator === 'in' ? inner : negate(inner);
  }

  private column(field: ContactColumnField, operator: ContactOperator, value: unknown): string {
    const col = `${this.alias}.${COLUMN_SQL[field]}`;
    if (field === 'subscribed') {
      return `${col} ${COMPARISON_SQL[operator]} ${this.param(value === true, 'boolean')}`;
    }
    if (field === 'email') {
      // Emails are stored lower-cased, so comparing with a lower-cased value is case-insensitive and uses the indexes.
      switch (operator) {
        case 'equals':
        case 'notEquals':
          return `${col} ${COMPARISON_SQL[operator]} ${this.param(String(value).toLowerCase(), 'text')}`;
        case 'in':
          return `${col} = ANY(${this.param(lowerAll(value), 'text[]')})`;
        case 'notIn':
          return `NOT (${col} = ANY(${this.param(lowerAll(value), 'text[]')}))`;
        default:
          return this.like(col, operator, String(value));
      }
    }
    // createdAt / updatedAt: instants; the windows run on the database clock, like the timestamps themselves.
    switch (operator) {
      case 'within':
        return `${col} >= now() - ${this.interval(value as TimeWindow)}`;
      case 'olderThan':
        return `${col} < now() - ${this.interval(value as TimeWindow)}`;
      default:
        return `${col} ${COMPARISON_SQL[operator]} ${this.param(isoInstant(value), 'timestamptz')}`;
    }
  }

  /** contains / startsWith / endsWith as ILIKE with the value's own wildcards escaped. */
  private like(expr: string, operator: ContactOperator, value: string): string {
    const escaped = escapeLike(value);
    const pattern =
      operator === 'startsWith'
        ? `${escaped}%`
        : operator === 'endsWith'
          ? `%${escaped}`
          : `%${escaped}%`;
    const test = `${expr} ILIKE ${this.param(pattern, 'text')}`;
    return operator === 'notContains' ? negate(test) : test;
  }

  private data(path: string[], operator: ContactOperator, value: unknown): string {
    // A chain of -> with one bound key each: cheaper per row than #> with a text[] path, which
    // deconstructs the array for every row, and just as injection-proof.
    const keys = path.map((key) => this.param(key, 'text'));
    const parent = [`${this.alias}.data`, ...keys.slice(0, -1)].join(' -> ');
    const last = keys[keys.length - 1];
    const json = `(${parent} -> ${last})`;
    const text = `(${parent} ->> ${last})`;
    const scalar = `jsonb_typeof(${json}) IN ('string', 'number', 'boolean')`;
    const numeric =
      `(CASE jsonb_typeof(${json}) WHEN 'number' THEN ${json}::numeric ` +
      `WHEN 'string' THEN CASE WHEN ${text} ~ '${NUMERIC_TEXT_RE}' THEN ${text}::numeric END END)`;
    const instant = `mailwright_try_timestamptz(${text})`;

    switch (operator) {
      case 'exists':
        return `${text} IS NOT NULL`;
      case 'notExists':
        return `${text} IS NULL`;
      case 'equals':
      case 'notEquals': {
        let test: string;
        if (typeof value === 'number') {
          test = `${numeric} = ${this.param(value, 'numeric')}`;
        } else if (typeof value === 'boolean') {
          test = `(jsonb_typeof(${json}) IN ('boolean', 'string') AND lower(${text}) = ${this.param(String(value), 'text')})`;
        } else {
          const str = String(value);
          test = `lower(${text}) = ${this.param(str.toLowerCase(), 'text')}`;
          const date = parseIsoDate(str);
          if (date)
            test = `(${test} OR ${instant} = ${this.param(date.toISOString(), 'timestamptz')})`;
          // Only a value that looks like JSON text could equal an object's or array's text; skip the check otherwise.
          if (/^\s*[[{]/.test(str)) test = `(${scalar} AND ${test})`;
        }
        return operator === 'equals' ? test : negate(test);
      }
      case 'contains':
      case 'notContains': {
        // On an array, contains means "has this element"; on a scalar, a substring.
        const element = this.param(String(value).toLowerCase(), 'text');
        const test =
          `(CASE WHEN jsonb_typeof(${json}) = 'array' ` +
          `THEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(${json}) AS el(v) WHERE lower(el.v) = ${element}) ` +
          `WHEN ${scalar} THEN ${this.like(text, 'contains', String(value))} END)`;
        return operator === 'contains' ? test : negate(test);
      }
      case 'startsWith':
      case 'endsWith':
        return `(${scalar} AND ${this.like(text, operator, String(value))})`;
      case 'greaterThan':
      case 'greaterThanOrEqual':
      case 'lessThan':
      case 'lessThanOrEqual': {
        const op = COMPARISON_SQL[operator] as string;
        if (typeof value === 'number') return `${numeric} ${op} ${this.param(value, 'numeric')}`;
        return `${instant} ${op} ${this.param(isoInstant(value), 'timestamptz')}`;
      }
      case 'in':
      case 'notIn': {
        const values = value as Array<string | number | boolean>;
        const texts = values.map((v) => String(v).toLowerCase());
        const numbers = values.filter((v): v is number => typeof v === 'number');
        const textList = this.param(texts, 'text[]');
        let scalarTest = `lower(${text}) = ANY(${textList})`;
        if (numbers.length > 0)
          scalarTest = `(${scalarTest} OR ${numeric} = ANY(${this.param(numbers, 'numeric[]')}))`;
        const test =
          `(CASE WHEN jsonb_typeof(${json}) = 'array' ` +
          `THEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(${json}) AS el(v) WHERE lower(el.v) = ANY(${textList})) ` +
          `WHEN ${scalar} THEN ${scalarTest} END)`;
        return operator === 'in' ? test : negate(test);
      }
      case 'within':
        return `(${instant} >= now() - ${this.interval(value as TimeWindow)} AND ${instant} <= now())`;
      case 'olderThan':
        return `${instant} < now() - ${this.interval(value as TimeWindow)}`;
    }
  }

  private event(eventName: string, operator: string, value: unknown): string {
    this.subqueries += 1;
    const e = `mw_e${this.subqueries}`;
    const name = this.param(eventName, 'text');
    const base =
      `FROM events ${e} WHERE ${e}.project_id = ${this.projectParam} ` +
      `AND ${e}.contact_id = ${this.alias}.id AND ${e}.name = ${name}`;
    switch (operator) {
      case 'triggered':
        return `EXISTS (SELECT 1 ${base})`;
      case 'notTriggered':
        return `NOT EXISTS (SELECT 1 ${base})`;
      case 'triggeredWithin':
        return `EXISTS (SELECT 1 ${base} AND ${e}.created_at >= now() - ${this.interval(value as TimeWindow)})`;
      case 'notTriggeredWithin':
        return `NOT EXISTS (SELECT 1 ${base} AND ${e}.created_at >= now() - ${this.interval(value as TimeWindow)})`;
      default: {
        // triggeredAtLeast: counting stops at `count`, so a contact with many events costs no more than the threshold.
        const at = value as CountWindow;
        const window =
          at.amount !== undefined && at.amount !== null && at.unit
            ? ` AND ${e}.created_at >= now() - ${this.interval({ amount: at.amount, unit: at.unit })}`
            : '';
        const count = this.param(at.count, 'int');
        if (this.purpose === 'count') {
          const events =
            `SELECT ${e}.contact_id FROM events ${e} WHERE ${e}.project_id = ${this.projectParam} ` +
            `AND ${e}.name = ${name}${window}`;
          return `${this.alias}.id IN (${events} GROUP BY ${e}.contact_id HAVING count(*) >= ${count})`;
        }
        return `(SELECT count(*) FROM (SELECT 1 ${base}${window} LIMIT ${count}) AS ${e}_n) >= ${count}`;
      }
    }
  }

  private interval(window: TimeWindow): string {
    return this.param(`${window.amount} ${window.unit}`, 'interval');
  }
}

/**
 * Session settings (SET LOCAL, inside a transaction) for a query that
 * evaluates a condition compiled with purpose "count" over every contact of
 * a project: a count, or the last resort of a members page.
 *
 * Postgres keeps no statistics on jsonb expressions and assumes a data rule
 * keeps 0.5% of the contacts (0.005% for a range). With an event rule
 * beside it, it then probes the events index once per contact left, which
 * is slow when the data rules in fact keep many contacts. Without nested
 * loops the event side is read once and hashed: the cost follows the number
 * of matching events, not the guess. A larger work_mem keeps those hashes
 * (and hashed IN subplans under OR) in memory for large projects. Measured
 * in bench/segments.js.
 */
export function wholeProjectSettings(compiled: CompiledCondition): string[] {
  const settings = [`SET LOCAL work_mem = '64MB'`];
  // A request's evaluation runs on one core: parallel workers would let one tenant's preview take
  // every core of the database from the others' requests (bench:noisy-neighbour). Jobs keep them.
  // Nor is it JIT-compiled: the compile grows with the number of rules, and for a condition of
  // many rules takes a core for longer than evaluating them interpreted (docs/segments.md).
  if (isApiRequest())
    settings.push('SET LOCAL max_parallel_workers_per_gather = 0', 'SET LOCAL jit = off');
  if (compiled.rules.data > 0 && compiled.rules.event > 0)
    settings.push('SET LOCAL enable_nestloop = off');
  return settings;
}

/** NOT that treats "unknown" (a missing key) as false first, so the negation of a rule is its exact complement. */
function negate(sql: string): string {
  return `NOT COALESCE(${sql}, FALSE)`;
}

function lowerAll(value: unknown): string[] {
  return (value as unknown[]).map((v) => String(v).toLowerCase());
}

function isoInstant(value: unknown): string {
  const date = parseIsoDate(String(value));
  if (!date) throw new Error('Unvalidated date value in a condition');
  return date.toISOString();
}
