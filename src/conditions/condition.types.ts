/**
 * The condition language shared by segments, campaign audience filters and
 * workflow CONDITION steps. These types describe a condition that passed
 * validateConditionShape(); raw request JSON is `unknown` until then.
 */

export type Logic = 'AND' | 'OR';

export interface ConditionGroup {
  logic: Logic;
  conditions: ConditionNode[];
}

export type ConditionNode = ConditionGroup | ConditionRule;

export type TimeUnit = 'minutes' | 'hours' | 'days';

export interface TimeWindow {
  amount: number;
  unit: TimeUnit;
}

export interface CountWindow {
  count: number;
  amount?: number;
  unit?: TimeUnit;
}

export const CONTACT_OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'startsWith',
  'endsWith',
  'greaterThan',
  'greaterThanOrEqual',
  'lessThan',
  'lessThanOrEqual',
  'in',
  'notIn',
  'exists',
  'notExists',
  'within',
  'olderThan',
] as const;
export type ContactOperator = (typeof CONTACT_OPERATORS)[number];

export const EVENT_OPERATORS = [
  'triggered',
  'notTriggered',
  'triggeredWithin',
  'notTriggeredWithin',
  'triggeredAtLeast',
] as const;
export type EventOperator = (typeof EVENT_OPERATORS)[number];

export const MEMBERSHIP_OPERATORS = ['in', 'notIn'] as const;
export type MembershipOperator = (typeof MEMBERSHIP_OPERATORS)[number];

export const TIME_UNITS: readonly TimeUnit[] = ['minutes', 'hours', 'days'];

/** Engagement fields are event rules on the system events of the same name. */
export const ENGAGEMENT_FIELDS = [
  'email.sent',
  'email.opened',
  'email.clicked',
  'email.bounced',
  'email.complained',
  'email.delayed',
] as const;

export const CONTACT_COLUMN_FIELDS = ['email', 'subscribed', 'createdAt', 'updatedAt'] as const;
export type ContactColumnField = (typeof CONTACT_COLUMN_FIELDS)[number];

/** A scalar a contact rule compares with; dates travel as ISO 8601 strings. */
export type RuleScalar = string | number | boolean;

export interface ConditionRule {
  field: string;
  operator: string;
  value?: unknown;
}

/**
 * A rule after classification: what the compiler works from. `path` is the
 * list of keys below `data` (`data.address.city` → ['address', 'city']).
 */
export type ClassifiedRule =
  | { kind: 'column'; field: ContactColumnField; operator: ContactOperator; value: unknown }
  | { kind: 'data'; path: string[]; operator: ContactOperator; value: unknown }
  | { kind: 'event'; eventName: string; operator: EventOperator; value: unknown }
  | { kind: 'segment'; segmentId: string; operator: MembershipOperator };

export const LIMITS = {
  /** The root group is level 1. */
  maxDepth: 5,
  maxRules: 50,
  /** Rules after inlining the segments that membership rules name (the SQL grows with them). */
  maxExpandedRules: 500,
  maxInValues: 1000,
  maxStringLength: 1000,
  maxDataPathKeys: 10,
  maxDataKeyLength: 200,
  maxEventNameLength: 100,
  maxWindowAmount: 1_000_000,
  maxEventCount: 100_000,
} as const;

export function isGroupNode(node: ConditionNode): node is ConditionGroup {
  return (node as ConditionGroup).logic !== undefined;
}
