import { randomBytes } from 'node:crypto';
import type { FieldError } from '../common/errors/api-exception';

/** Step definitions as stored (jsonb) and answered. */
export type DurationUnit = 'seconds' | 'minutes' | 'hours' | 'days';
export interface StepDuration {
  amount: number;
  unit: DurationUnit;
}

export type WebhookMethod = 'POST' | 'PUT' | 'PATCH' | 'GET';

export interface SendEmailStep {
  id: string;
  type: 'SEND_EMAIL';
  templateId: string;
}
export interface DelayStep extends StepDuration {
  id: string;
  type: 'DELAY';
}
export interface WaitForEventStep {
  id: string;
  type: 'WAIT_FOR_EVENT';
  event: string;
  timeout: StepDuration;
  then?: WorkflowStep[];
  else?: WorkflowStep[];
}
export interface ConditionStep {
  id: string;
  type: 'CONDITION';
  condition: unknown;
  then: WorkflowStep[];
  else: WorkflowStep[];
}
export interface UpdateContactStep {
  id: string;
  type: 'UPDATE_CONTACT';
  data?: Record<string, unknown>;
  subscribed?: boolean;
}
export interface WebhookStep {
  id: string;
  type: 'WEBHOOK';
  url: string;
  method: WebhookMethod;
  headers?: Record<string, string>;
  body?: string;
}
export interface ExitStep {
  id: string;
  type: 'EXIT';
}

export type WorkflowStep =
  | SendEmailStep
  | DelayStep
  | WaitForEventStep
  | ConditionStep
  | UpdateContactStep
  | WebhookStep
  | ExitStep;

export type StepType = WorkflowStep['type'];

export const STEP_TYPES: readonly StepType[] = [
  'SEND_EMAIL',
  'DELAY',
  'WAIT_FOR_EVENT',
  'CONDITION',
  'UPDATE_CONTACT',
  'WEBHOOK',
  'EXIT',
];

export const STEP_LIMITS = {
  /** Steps in a workflow, branches included. */
  maxSteps: 100,
  /** Branching steps inside one another: a branch of the tenth may hold steps, the eleventh has no place. */
  maxDepth: 10,
  /** A delay or a wait's timeout. */
  maxDurationMs: 365 * 24 * 3_600_000,
  /** JSON of UPDATE_CONTACT data, WEBHOOK body. */
  maxValueBytes: 65_536,
  maxHeaders: 50,
} as const;

const UNIT_MS: Record<DurationUnit, number> = {
  seconds: 1_000,
  minutes: 60_000,
  hours: 3_600_000,
  days: 86_400_000,
};

export function durationMs(d: StepDuration): number {
  return d.amount * UNIT_MS[d.unit];
}

/** What an execution waiting at a step waits for: how long from when the wait began, and which event (null: none). */
export interface StepWait {
  durationMs: number;
  event: string | null;
}

/** A DELAY's or a WAIT_FOR_EVENT's wait; null for a step nobody waits at. */
export function waitOf(step: WorkflowStep): StepWait | null {
  if (step.type === 'DELAY') return { durationMs: durationMs(step), event: null };
  if (step.type === 'WAIT_FOR_EVENT')
    return { durationMs: durationMs(step.timeout), event: step.event };
  return null;
}

const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;
const EVENT_NAME = /^[^\r\n]{1,100}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
/** Headers the step may not set: the transport owns them. */
const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

const ALLOWED_KEYS: Record<StepType, string[]> = {
  SEND_EMAIL: ['id', 'type', 'templateId'],
  DELAY: ['id', 'type', 'amount', 'unit'],
  WAIT_FOR_EVENT: ['id', 'type', 'event', 'timeout', 'then', 'else'],
  CONDITION: ['id', 'type', 'condition', 'then', 'else'],
  UPDATE_CONTACT: ['id', 'type', 'data', 'subscribed'],
  WEBHOOK: ['id', 'type', 'url', 'method', 'headers', 'body'],
  EXIT: ['id', 'type'],
};

/** What the structural check leaves to the service (it needs the database). */
export interface StepReferences {
  templates: { path: string; templateId: string }[];
  conditions: { path: string; condition: unknown }[];
  /** Liquid sources to parse: webhook bodies and header values. */
  liquid: { path: string; source: string }[];
}

export interface StepsCheck {
  steps: WorkflowStep[];
  errors: FieldError[];
  refs: StepReferences;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function newStepId(): string {
  return `s_${randomBytes(6).toString('base64url')}`;
}

/** Every string `id` the client gave in a raw steps tree (walked as written, whatever else is wrong with it). */
function givenIds(input: unknown, out = new Set<string>()): Set<string> {
  if (!Array.isArray(input)) return out;
  for (const raw of input) {
    if (!isObject(raw)) continue;
    if (typeof raw.id === 'string') out.add(raw.id);
    givenIds(raw.then, out);
    givenIds(raw.else, out);
  }
  return out;
}

/**
 * The structure of a steps tree: types, fields, limits, ids (kept, or
 * generated when absent; unique). Answers the normalised steps (ids filled
 * in, only known keys) and every problem with a `field` path into `steps`
 * (`steps[2].then[0].templateId`). Template ids and conditions are returned
 * for the service to check against the project.
 *
 * Ids stay stable across edits when `previous` (the stored steps) is given:
 * a step sent without an id takes the id of the stored step at the same place
 * (same list, same index, inside branching steps that matched the same way)
 * when that step has the same type and no step of the request names its id.
 * So a client that resends the steps without their ids keeps every execution
 * where it is; one that inserts or reorders steps sends the ids.
 */
export function checkSteps(
  input: unknown,
  previous: readonly WorkflowStep[] = [],
  path = 'steps',
): StepsCheck {
  const errors: FieldError[] = [];
  const refs: StepReferences = { templates: [], conditions: [], liquid: [] };
  const seen = new Set<string>();
  const given = givenIds(input);
  let count = 0;
  const err = (field: string, message: string, code: FieldError['code'] = 'custom') =>
    errors.push({ field, message, code });

  const duration = (value: unknown, at: string): StepDuration | null => {
    if (!isObject(value)) {
      err(
        at,
        `${at} must be an object {amount, unit}`,
        value === undefined ? 'required' : 'invalid_type',
      );
      return null;
    }
    const extra = Object.keys(value).filter((k) => k !== 'amount' && k !== 'unit');
    if (extra.length > 0) err(at, `Unknown field(s): ${extra.join(', ')}`, 'unrecognized_keys');
    return durationOf(value, at);
  };
  const durationOf = (value: Record<string, unknown>, at: string): StepDuration | null => {
    const { amount, unit } = value;
    let ok = true;
    if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1) {
      err(
        `${at}.amount`,
        'amount must be a positive integer',
        amount === undefined ? 'required' : 'invalid_type',
      );
      ok = false;
    }
    if (typeof unit !== 'string' || !(unit in UNIT_MS)) {
      err(
        `${at}.unit`,
        'unit must be one of seconds, minutes, hours, days',
        unit === undefined ? 'required' : 'invalid_enum_value',
      );
      ok = false;
    }
    if (!ok) return null;
    const d = { amount: amount as number, unit: unit as DurationUnit };
    if (durationMs(d) > STEP_LIMITS.maxDurationMs) {
      err(`${at}.amount`, 'at most 365 days', 'too_big');
      return null;
    }
    return d;
  };

  const list = (
    value: unknown,
    at: string,
    depth: number,
    required: boolean,
    before: readonly WorkflowStep[] = [],
  ): WorkflowStep[] => {
    if (value === undefined && !required) return [];
    if (!Array.isArray(value)) {
      err(at, `${at} must be an array of steps`, value === undefined ? 'required' : 'invalid_type');
      return [];
    }
    if (depth > STEP_LIMITS.maxDepth) {
      err(at, `Branches nest at most ${STEP_LIMITS.maxDepth} deep`, 'too_big');
      return [];
    }
    const out: WorkflowStep[] = [];
    value.forEach((raw, i) => {
      const step = one(raw, `${at}[${i}]`, depth, before[i]);
      if (step) out.push(step);
    });
    return out;
  };

  const one = (
    raw: unknown,
    at: string,
    depth: number,
    stored: WorkflowStep | undefined,
  ): WorkflowStep | null => {
    count++;
    if (count === STEP_LIMITS.maxSteps + 1)
      err(path, `At most ${STEP_LIMITS.maxSteps} steps`, 'too_big');
    if (!isObject(raw)) {
      err(at, 'A step must be an object', 'invalid_type');
      return null;
    }
    const type = raw.type;
    if (typeof type !== 'string' || !STEP_TYPES.includes(type as StepType)) {
      err(
        `${at}.type`,
        `type must be one of ${STEP_TYPES.join(', ')}`,
        type === undefined ? 'required' : 'invalid_enum_value',
      );
      return null;
    }
    const extra = Object.keys(raw).filter((k) => !ALLOWED_KEYS[type as StepType].includes(k));
    if (extra.length > 0)
      err(at, `Unknown field(s) for ${type}: ${extra.join(', ')}`, 'unrecognized_keys');
    // The stored step at this place, when it is the same kind of step: its id and its branches to match against.
    const same = stored?.type === type ? stored : undefined;
    let id: string;
    if (raw.id === undefined)
      id = same && !given.has(same.id) && !seen.has(same.id) ? same.id : newStepId();
    else if (typeof raw.id !== 'string' || !STEP_ID.test(raw.id)) {
      err(`${at}.id`, 'id must be 1..64 of A-Z a-z 0-9 _ -', 'invalid_string');
      id = newStepId();
    } else id = raw.id;
    if (seen.has(id)) err(`${at}.id`, `Step id ${id} is used twice`, 'custom');
    seen.add(id);

    switch (type as StepType) {
      case 'SEND_EMAIL': {
        const templateId = raw.templateId;
        if (
          typeof templateId !== 'string' ||
          !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(templateId)
        ) {
          err(
            `${at}.templateId`,
            'templateId must be a template id',
            templateId === undefined ? 'required' : 'invalid_string',
          );
          return null;
        }
        refs.templates.push({ path: `${at}.templateId`, templateId: templateId.toLowerCase() });
        return { id, type: 'SEND_EMAIL', templateId: templateId.toLowerCase() };
      }
      case 'DELAY': {
        const d = durationOf(raw, at);
        return d ? { id, type: 'DELAY', ...d } : null;
      }
      case 'WAIT_FOR_EVENT': {
        const event = raw.event;
        if (typeof event !== 'string' || !EVENT_NAME.test(event) || event.trim() !== event) {
          err(
            `${at}.event`,
            'event must be an event name (1..100 characters, no line breaks)',
            event === undefined ? 'required' : 'invalid_string',
          );
        }
        const timeout = duration(raw.timeout, `${at}.timeout`);
        const branches = same?.type === 'WAIT_FOR_EVENT' ? same : undefined;
        const thenSteps = list(raw.then, `${at}.then`, depth + 1, false, branches?.then);
        const elseSteps = list(raw.else, `${at}.else`, depth + 1, false, branches?.else);
        if (typeof event !== 'string' || !timeout) return null;
        return { id, type: 'WAIT_FOR_EVENT', event, timeout, then: thenSteps, else: elseSteps };
      }
      case 'CONDITION': {
        if (raw.condition === undefined || raw.condition === null)
          err(`${at}.condition`, 'condition is required', 'required');
        else refs.conditions.push({ path: `${at}.condition`, condition: raw.condition });
        const branches = same?.type === 'CONDITION' ? same : undefined;
        const thenSteps = list(raw.then, `${at}.then`, depth + 1, true, branches?.then);
        const elseSteps = list(raw.else, `${at}.else`, depth + 1, true, branches?.else);
        return {
          id,
          type: 'CONDITION',
          condition: raw.condition,
          then: thenSteps,
          else: elseSteps,
        };
      }
      case 'UPDATE_CONTACT': {
        const step: UpdateContactStep = { id, type: 'UPDATE_CONTACT' };
        if (raw.data !== undefined) {
          if (!isObject(raw.data)) err(`${at}.data`, 'data must be an object', 'invalid_type');
          else if (Buffer.byteLength(JSON.stringify(raw.data)) > STEP_LIMITS.maxValueBytes)
            err(`${at}.data`, 'data is too large', 'too_big');
          else step.data = raw.data;
        }
        if (raw.subscribed !== undefined) {
          if (typeof raw.subscribed !== 'boolean')
            err(`${at}.subscribed`, 'subscribed must be a boolean', 'invalid_type');
          else step.subscribed = raw.subscribed;
        }
        if (raw.data === undefined && raw.subscribed === undefined)
          err(at, 'UPDATE_CONTACT needs data or subscribed', 'required');
        return step;
      }
      case 'WEBHOOK': {
        const step: WebhookStep = { id, type: 'WEBHOOK', url: '', method: 'POST' };
        const url = raw.url;
        let parsed: URL | null = null;
        try {
          parsed = typeof url === 'string' && url.length <= 2048 ? new URL(url) : null;
        } catch {
          parsed = null;
        }
        if (
          !parsed ||
          (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
          /[\r\n]/.test(String(url))
        ) {
          err(
            `${at}.url`,
            'url must be an http(s) URL of at most 2048 characters',
            url === undefined ? 'required' : 'invalid_string',
          );
        } else step.url = url as string;
        const method = raw.method ?? 'POST';
        if (typeof method !== 'string' || !['POST', 'PUT', 'PATCH', 'GET'].includes(method)) {
          err(`${at}.method`, 'method must be one of POST, PUT, PATCH, GET', 'invalid_enum_value');
        } else step.method = method as WebhookMethod;
        if (raw.headers !== undefined) {
          if (!isObject(raw.headers))
            err(`${at}.headers`, 'headers must be an object of strings', 'invalid_type');
          else {
            const entries = Object.entries(raw.headers);
            if (entries.length > STEP_LIMITS.maxHeaders)
              err(`${at}.headers`, `At most ${STEP_LIMITS.maxHeaders} headers`, 'too_big');
            for (const [name, value] of entries) {
              if (!HEADER_NAME.test(name) || FORBIDDEN_HEADERS.has(name.toLowerCase())) {
                err(`${at}.headers.${name}`, 'Not an allowed header name', 'invalid_string');
              } else if (
                typeof value !== 'string' ||
                /[\r\n\0]/.test(value) ||
                value.length > 8192
              ) {
                err(
                  `${at}.headers.${name}`,
                  'A header value is a string without line breaks (at most 8192 characters)',
                  'invalid_string',
                );
              } else refs.liquid.push({ path: `${at}.headers.${name}`, source: value });
            }
            step.headers = raw.headers as Record<string, string>;
          }
        }
        if (raw.body !== undefined) {
          if (typeof raw.body !== 'string')
            err(`${at}.body`, 'body must be a string (Liquid)', 'invalid_type');
          else if (Buffer.byteLength(raw.body) > STEP_LIMITS.maxValueBytes)
            err(`${at}.body`, 'body is too large', 'too_big');
          else {
            if (step.method === 'GET') err(`${at}.body`, 'A GET request has no body', 'custom');
            refs.liquid.push({ path: `${at}.body`, source: raw.body });
            step.body = raw.body;
          }
        }
        return step;
      }
      case 'EXIT':
        return { id, type: 'EXIT' };
    }
  };

  // A list's depth is the number of branching steps around it: the top level is 0.
  const steps = list(input, path, 0, true, previous);
  return { steps, errors, refs };
}

/** Where a step sits: its list, its index there, and the branching step whose branch holds it. */
interface StepPlace {
  step: WorkflowStep;
  list: WorkflowStep[];
  index: number;
  parent: WorkflowStep | null;
}

/**
 * A workflow's steps indexed by id, for the engine: where an execution goes
 * next. After a branch ends, the flow goes on with the step after the
 * branching step; after the last top-level step, the execution completes.
 */
export class StepTree {
  private readonly places = new Map<string, StepPlace>();

  constructor(readonly steps: WorkflowStep[]) {
    const walk = (list: WorkflowStep[], parent: WorkflowStep | null) =>
      list.forEach((step, index) => {
        this.places.set(step.id, { step, list, index, parent });
        if (step.type === 'CONDITION' || step.type === 'WAIT_FOR_EVENT') {
          walk(step.then ?? [], step);
          walk(step.else ?? [], step);
        }
      });
    walk(steps, null);
  }

  get(id: string): WorkflowStep | null {
    return this.places.get(id)?.step ?? null;
  }

  /** Every step id, branches included. */
  ids(): string[] {
    return [...this.places.keys()];
  }

  first(): string | null {
    return this.steps[0]?.id ?? null;
  }

  /** The step after `id` once it is done (null: the workflow is finished). */
  next(id: string): string | null {
    const place = this.places.get(id);
    if (!place) return null;
    if (place.index + 1 < place.list.length) return place.list[place.index + 1].id;
    return place.parent ? this.next(place.parent.id) : null;
  }

  /** The first step of a branch of a branching step, or the step after it when the branch is empty. */
  enter(branching: ConditionStep | WaitForEventStep, branch: 'then' | 'else'): string | null {
    const steps = branch === 'then' ? branching.then : branching.else;
    return steps && steps.length > 0 ? steps[0].id : this.next(branching.id);
  }
}
