import { useId, useState, type InputHTMLAttributes } from 'react';
import { NameList } from './form';
import './conditions.css';

/**
 * The condition language (contract "Segments"; src/conditions on the server) as a visual builder.
 * Segments edit their condition with it, and the campaign page's "audience by filter" reuses it:
 * `<ConditionBuilder value={group} onChange={setGroup} />` edits the API's own JSON, so what it
 * holds is what is sent. The server validates (POST /segments/preview answers 422 with a path into
 * the condition); the builder only offers the fields, operators and value shapes it accepts.
 */

export type Logic = 'AND' | 'OR';
// Type aliases, not interfaces: they fit the API's `{[key: string]: unknown}` condition type.
export type ConditionGroup = {
  logic: Logic;
  conditions: ConditionNode[];
};
export type ConditionRule = {
  field: string;
  operator: string;
  value?: unknown;
};
export type ConditionNode = ConditionGroup | ConditionRule;

export const isGroup = (node: ConditionNode): node is ConditionGroup =>
  (node as ConditionGroup).logic !== undefined || (node as ConditionGroup).conditions !== undefined;

/** An empty "all of" group: the starting point of a new condition. */
export const emptyCondition = (): ConditionGroup => ({ logic: 'AND', conditions: [] });

const MAX_DEPTH = 5;
const UNITS = ['minutes', 'hours', 'days'] as const;

const STRING_OPS = ['contains', 'notContains', 'startsWith', 'endsWith'];
const COMPARE_OPS = ['greaterThan', 'greaterThanOrEqual', 'lessThan', 'lessThanOrEqual'];
const CONTACT_OPS = [
  'equals',
  'notEquals',
  ...STRING_OPS,
  ...COMPARE_OPS,
  'in',
  'notIn',
  'exists',
  'notExists',
  'within',
  'olderThan',
];
const EVENT_OPS = [
  'triggered',
  'notTriggered',
  'triggeredWithin',
  'notTriggeredWithin',
  'triggeredAtLeast',
];

/** Operators per field, as the server's validator allows them. */
const COLUMN_OPS: Record<string, string[]> = {
  email: ['equals', 'notEquals', ...STRING_OPS, 'in', 'notIn'],
  subscribed: ['equals', 'notEquals'],
  createdAt: ['equals', 'notEquals', ...COMPARE_OPS, 'within', 'olderThan'],
  updatedAt: ['equals', 'notEquals', ...COMPARE_OPS, 'within', 'olderThan'],
};

export const ENGAGEMENT_FIELDS = [
  'email.sent',
  'email.opened',
  'email.clicked',
  'email.bounced',
  'email.complained',
  'email.delayed',
];

const OPERATOR_WORDS: Record<string, string> = {
  equals: 'is',
  notEquals: 'is not',
  contains: 'contains',
  notContains: 'does not contain',
  startsWith: 'starts with',
  endsWith: 'ends with',
  greaterThan: 'is greater than (after)',
  greaterThanOrEqual: 'is at least',
  lessThan: 'is less than (before)',
  lessThanOrEqual: 'is at most',
  in: 'is one of',
  notIn: 'is none of',
  exists: 'is set',
  notExists: 'is not set',
  within: 'is within the last',
  olderThan: 'is older than',
  triggered: 'happened',
  notTriggered: 'never happened',
  triggeredWithin: 'happened within the last',
  notTriggeredWithin: 'did not happen within the last',
  triggeredAtLeast: 'happened at least',
};

type Kind = 'column' | 'data' | 'event' | 'engagement' | 'segment' | 'unknown';

/** What a rule's field addresses; a `data.` or `event.` prefix keeps its kind while the key is typed. */
export function fieldKind(field: string): Kind {
  if (field in COLUMN_OPS) return 'column';
  if (ENGAGEMENT_FIELDS.includes(field)) return 'engagement';
  if (field === 'segment') return 'segment';
  if (field.startsWith('data.')) return 'data';
  if (field.startsWith('event.')) return 'event';
  return 'unknown';
}

function operatorsFor(field: string): string[] {
  switch (fieldKind(field)) {
    case 'column':
      return COLUMN_OPS[field];
    case 'data':
      return CONTACT_OPS;
    case 'event':
    case 'engagement':
      return EVENT_OPS;
    case 'segment':
      return ['in', 'notIn'];
    default:
      return [];
  }
}

/** The value a rule starts with for an operator (so a new rule is already well shaped). */
function defaultValue(field: string, operator: string): unknown {
  if (['exists', 'notExists', 'triggered', 'notTriggered'].includes(operator)) return undefined;
  if (['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'].includes(operator))
    return { amount: 7, unit: 'days' };
  if (operator === 'triggeredAtLeast') return { count: 2 };
  if (operator === 'in' || operator === 'notIn') return field === 'segment' ? '' : [];
  if (field === 'subscribed') return true;
  if (field === 'createdAt' || field === 'updatedAt') return new Date().toISOString();
  return '';
}

/** The choices of the field select; data and event fields take a key or name beside it. */
const FIELD_CHOICES: [string, string][] = [
  ['email', 'Email address'],
  ['subscribed', 'Subscribed'],
  ['createdAt', 'Created at'],
  ['updatedAt', 'Updated at'],
  ['data.', 'Contact data field…'],
  ['event.', 'Event…'],
  ...ENGAGEMENT_FIELDS.map((f): [string, string] => [f, `Email ${f.slice(6)}`]),
  ['segment', 'Segment membership'],
];

function fieldChoice(field: string): string {
  const kind = fieldKind(field);
  if (kind === 'data') return 'data.';
  if (kind === 'event') return 'event.';
  return field;
}

export interface ConditionBuilderProps {
  value: ConditionGroup;
  onChange: (value: ConditionGroup) => void;
  /** Segments a membership rule may name (id and name); the current segment should be left out. */
  segments?: { id: string; name: string }[];
  /** Event names offered for event rules (free text is allowed too). */
  eventNames?: string[];
  /** The root group's name for assistive technology. */
  label?: string;
}

/** The whole builder: the root group, nested groups, and the rules in them. */
export function ConditionBuilder({
  value,
  onChange,
  segments = [],
  eventNames = [],
  label = 'Conditions',
}: ConditionBuilderProps) {
  const listId = useId();
  return (
    <div className="conditions">
      <NameList id={listId} names={eventNames} />
      <GroupEditor
        group={value}
        onChange={onChange}
        path={[]}
        legend={label}
        ctx={{ segments, eventList: listId }}
      />
    </div>
  );
}

interface Ctx {
  segments: { id: string; name: string }[];
  eventList: string;
}

const numbered = (path: number[]) => path.map((i) => i + 1).join('.');

// Keys of the editors in a group: stable across removals, so each keeps its own typing state.
let keySeq = 0;
const nextKey = () => ++keySeq;

function GroupEditor({
  group,
  onChange,
  onRemove,
  path,
  legend,
  ctx,
  autoFocus,
}: {
  group: ConditionGroup;
  onChange: (g: ConditionGroup) => void;
  onRemove?: () => void;
  path: number[];
  legend: string;
  ctx: Ctx;
  autoFocus?: boolean;
}) {
  const depth = path.length + 1;
  const children = Array.isArray(group.conditions) ? group.conditions : [];
  const [keys, setKeys] = useState(() => children.map(nextKey));
  // The key just added: its editor takes the focus, so the keyboard goes on where the button was.
  const [added, setAdded] = useState<number>();
  if (keys.length !== children.length) setKeys(children.map(nextKey)); // replaced from outside
  const set = (index: number, node: ConditionNode) =>
    onChange({ ...group, conditions: children.map((c, i) => (i === index ? node : c)) });
  const remove = (index: number) => {
    setKeys(keys.filter((_, i) => i !== index));
    onChange({ ...group, conditions: children.filter((_, i) => i !== index) });
  };
  const add = (node: ConditionNode) => {
    const key = nextKey();
    setKeys([...keys, key]);
    setAdded(key);
    onChange({ ...group, conditions: [...children, node] });
  };
  const logicId = useId();
  return (
    <fieldset className={`cond-group depth-${Math.min(depth, 5)}`}>
      <legend>{legend}</legend>
      <div className="cond-row">
        <label htmlFor={logicId}>Match</label>
        <select
          id={logicId}
          autoFocus={autoFocus}
          value={group.logic}
          onChange={(e) => onChange({ ...group, logic: e.target.value as Logic })}
        >
          <option value="AND">all of these (AND)</option>
          <option value="OR">any of these (OR)</option>
        </select>
        {onRemove && (
          <button type="button" className="small danger" onClick={onRemove}>
            Remove {legend.toLowerCase()}
          </button>
        )}
      </div>
      {children.length === 0 && (
        <p className="muted">
          {depth === 1 ? 'No conditions: every contact matches.' : 'An empty group matches all.'}
        </p>
      )}
      <ol className="cond-list">
        {children.map((node, i) => {
          const childPath = [...path, i];
          return (
            <li key={keys[i] ?? `i${i}`}>
              {isGroup(node) ? (
                <GroupEditor
                  group={node}
                  onChange={(g) => set(i, g)}
                  onRemove={() => remove(i)}
                  path={childPath}
                  legend={`Group ${numbered(childPath)}`}
                  ctx={ctx}
                  autoFocus={keys[i] === added}
                />
              ) : (
                <RuleEditor
                  rule={node}
                  onChange={(r) => set(i, r)}
                  onRemove={() => remove(i)}
                  legend={`Condition ${numbered(childPath)}`}
                  ctx={ctx}
                  autoFocus={keys[i] === added}
                />
              )}
            </li>
          );
        })}
      </ol>
      <div className="cond-row">
        <button
          type="button"
          className="small"
          onClick={() => add({ field: 'email', operator: 'contains', value: '' })}
        >
          Add condition{depth > 1 ? ` to group ${numbered(path)}` : ''}
        </button>
        <button
          type="button"
          className="small"
          disabled={depth >= MAX_DEPTH}
          title={depth >= MAX_DEPTH ? `Groups nest at most ${MAX_DEPTH} levels deep` : undefined}
          onClick={() => add({ logic: 'OR', conditions: [] })}
        >
          Add group{depth > 1 ? ` to group ${numbered(path)}` : ''}
        </button>
      </div>
    </fieldset>
  );
}

function RuleEditor({
  rule,
  onChange,
  onRemove,
  legend,
  ctx,
  autoFocus,
}: {
  rule: ConditionRule;
  onChange: (r: ConditionRule) => void;
  onRemove: () => void;
  legend: string;
  ctx: Ctx;
  autoFocus?: boolean;
}) {
  const ids = { field: useId(), key: useId(), op: useId() };
  const field = typeof rule.field === 'string' ? rule.field : '';
  const kind = fieldKind(field);
  const ops = operatorsFor(field);

  const changeField = (next: string) => {
    const nextOps = operatorsFor(next);
    const operator = nextOps.includes(rule.operator) ? rule.operator : nextOps[0];
    onChange({ field: next, operator, value: defaultValue(next, operator) });
  };
  const changeOperator = (operator: string) => {
    const old = defaultValue(field, rule.operator);
    const fresh = defaultValue(field, operator);
    // Keep a typed value when its shape still fits (equals → contains); otherwise start afresh.
    const sameShape =
      typeof old === typeof fresh &&
      Array.isArray(old) === Array.isArray(fresh) &&
      (typeof fresh !== 'object' ||
        fresh === null ||
        Array.isArray(fresh) ||
        'count' in fresh === 'count' in (old as object));
    onChange({ field, operator, value: sameShape ? rule.value : fresh });
  };

  return (
    <fieldset className="cond-rule">
      <legend>{legend}</legend>
      <div className="cond-row">
        <span className="cond-cell">
          <label htmlFor={ids.field}>Field</label>
          <select
            id={ids.field}
            autoFocus={autoFocus}
            value={kind === 'unknown' ? '' : fieldChoice(field)}
            onChange={(e) => changeField(e.target.value)}
          >
            {kind === 'unknown' && <option value="">{field || 'Choose a field'}</option>}
            {FIELD_CHOICES.map(([v, text]) => (
              <option key={v} value={v}>
                {text}
              </option>
            ))}
          </select>
        </span>
        {(kind === 'data' || kind === 'event') && (
          <span className="cond-cell">
            <label htmlFor={ids.key}>{kind === 'data' ? 'Data key' : 'Event name'}</label>
            <input
              id={ids.key}
              value={field.slice(kind === 'data' ? 5 : 6)}
              list={kind === 'event' ? ctx.eventList : undefined}
              placeholder={kind === 'data' ? 'plan or address.city' : 'purchase'}
              onChange={(e) =>
                onChange({
                  ...rule,
                  field: `${kind === 'data' ? 'data.' : 'event.'}${e.target.value}`,
                })
              }
            />
          </span>
        )}
        <span className="cond-cell">
          <label htmlFor={ids.op}>Operator</label>
          <select
            id={ids.op}
            value={ops.includes(rule.operator) ? rule.operator : ''}
            onChange={(e) => changeOperator(e.target.value)}
          >
            {!ops.includes(rule.operator) && <option value="">{rule.operator || '—'}</option>}
            {ops.map((op) => (
              <option key={op} value={op}>
                {OPERATOR_WORDS[op] ?? op}
              </option>
            ))}
          </select>
        </span>
        <ValueEditor rule={rule} onChange={(value) => onChange({ ...rule, value })} ctx={ctx} />
        <button type="button" className="small danger" onClick={onRemove}>
          Remove {legend.toLowerCase()}
        </button>
      </div>
    </fieldset>
  );
}

type ScalarType = 'text' | 'number' | 'boolean';

function scalarType(value: unknown): ScalarType {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return 'text';
}

function convert(value: unknown, type: ScalarType): string | number | boolean {
  if (type === 'number') {
    const n = Number(value);
    return Number.isFinite(n) && value !== '' ? n : 0;
  }
  if (type === 'boolean') return value === true || value === 'true';
  return value === undefined || value === null ? '' : String(value);
}

/** `<input type=datetime-local>` shows local time; the API takes ISO 8601 instants. */
function toLocalInput(iso: unknown): string {
  if (typeof iso !== 'string') return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function ValueEditor({
  rule,
  onChange,
  ctx,
}: {
  rule: ConditionRule;
  onChange: (value: unknown) => void;
  ctx: Ctx;
}) {
  const ids = { value: useId(), type: useId(), amount: useId(), unit: useId(), count: useId() };
  const { field, operator, value } = rule;
  // The type of a data value shows in the value itself once there is one; until then, the choice.
  const inferred = Array.isArray(value)
    ? value.length > 0
      ? scalarType(value[0])
      : undefined
    : value === '' || value === undefined
      ? undefined
      : scalarType(value);
  const [chosenType, setChosenType] = useState<ScalarType>(inferred ?? 'text');
  const kind = fieldKind(field);
  const obj = (
    typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {}
  ) as Record<string, unknown>;

  if (['exists', 'notExists', 'triggered', 'notTriggered'].includes(operator)) return null;

  const window = (withCount: boolean) => (
    <>
      {withCount && (
        <span className="cond-cell narrow">
          <label htmlFor={ids.count}>Times</label>
          <input
            id={ids.count}
            type="number"
            min={1}
            value={typeof obj.count === 'number' ? obj.count : ''}
            onChange={(e) => onChange({ ...obj, count: e.target.valueAsNumber || undefined })}
          />
        </span>
      )}
      <span className="cond-cell narrow">
        <label htmlFor={ids.amount}>{withCount ? 'Within (optional)' : 'Amount'}</label>
        <input
          id={ids.amount}
          type="number"
          min={1}
          value={typeof obj.amount === 'number' ? obj.amount : ''}
          onChange={(e) => {
            const amount = e.target.valueAsNumber;
            const next: Record<string, unknown> = {
              ...obj,
              amount: Number.isFinite(amount) ? amount : undefined,
            };
            if (withCount && next.amount === undefined) delete next.unit;
            else if (withCount && next.unit === undefined) next.unit = 'days';
            onChange(next);
          }}
        />
      </span>
      <span className="cond-cell narrow">
        <label htmlFor={ids.unit}>Unit</label>
        <select
          id={ids.unit}
          value={typeof obj.unit === 'string' ? obj.unit : ''}
          onChange={(e) => onChange({ ...obj, unit: e.target.value || undefined })}
        >
          {(withCount || typeof obj.unit !== 'string') && <option value="">—</option>}
          {UNITS.map((u) => (
            <option key={u} value={u}>
              {u}
            </option>
          ))}
        </select>
      </span>
    </>
  );

  if (['within', 'olderThan', 'triggeredWithin', 'notTriggeredWithin'].includes(operator))
    return window(false);
  if (operator === 'triggeredAtLeast') return window(true);

  if (kind === 'segment') {
    return (
      <span className="cond-cell">
        <label htmlFor={ids.value}>Segment</label>
        <select
          id={ids.value}
          value={String(value ?? '')}
          onChange={(e) => onChange(e.target.value)}
        >
          <option value="">Choose a segment</option>
          {ctx.segments.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name}
            </option>
          ))}
          {typeof value === 'string' && value && !ctx.segments.some((s) => s.id === value) && (
            <option value={value}>{value}</option>
          )}
        </select>
      </span>
    );
  }

  if (field === 'subscribed') {
    return (
      <span className="cond-cell">
        <label htmlFor={ids.value}>Value</label>
        <select
          id={ids.value}
          value={String(value === true)}
          onChange={(e) => onChange(e.target.value === 'true')}
        >
          <option value="true">yes</option>
          <option value="false">no</option>
        </select>
      </span>
    );
  }

  if (
    (field === 'createdAt' || field === 'updatedAt') &&
    operator !== 'in' &&
    operator !== 'notIn'
  ) {
    return (
      <span className="cond-cell">
        <label htmlFor={ids.value}>Date and time</label>
        <input
          id={ids.value}
          type="datetime-local"
          value={toLocalInput(value)}
          onChange={(e) => {
            const d = new Date(e.target.value);
            onChange(Number.isNaN(d.getTime()) ? '' : d.toISOString());
          }}
        />
      </span>
    );
  }

  // Data keys hold any JSON scalar: the type decides what the value is sent as.
  const typed = kind === 'data' && !STRING_OPS.includes(operator);
  const list = operator === 'in' || operator === 'notIn';
  const items = Array.isArray(value) ? value : [];
  const type: ScalarType = typed ? (inferred ?? chosenType) : 'text';
  const typeSelect = typed && (
    <span className="cond-cell narrow">
      <label htmlFor={ids.type}>Type</label>
      <select
        id={ids.type}
        value={type}
        onChange={(e) => {
          const t = e.target.value as ScalarType;
          setChosenType(t);
          onChange(list ? items.map((v) => convert(v, t)) : convert(value, t));
        }}
      >
        <option value="text">text or date</option>
        <option value="number">number</option>
        <option value="boolean">yes/no</option>
      </select>
    </span>
  );

  if (list) {
    return (
      <>
        {typeSelect}
        <span className="cond-cell wide">
          <label htmlFor={ids.value}>Values (comma-separated)</label>
          <DraftInput
            id={ids.value}
            value={items}
            format={(v) => (Array.isArray(v) ? v.map(String).join(', ') : '')}
            parse={(text) =>
              text
                .split(',')
                .map((part) => part.trim())
                .filter((part) => part.length > 0)
                .map((part) => parseScalar(part, type))
            }
            onValue={onChange}
          />
        </span>
      </>
    );
  }

  if (typed && type === 'boolean') {
    return (
      <>
        {typeSelect}
        <span className="cond-cell">
          <label htmlFor={ids.value}>Value</label>
          <select
            id={ids.value}
            value={String(value === true)}
            onChange={(e) => onChange(e.target.value === 'true')}
          >
            <option value="true">yes (true)</option>
            <option value="false">no (false)</option>
          </select>
        </span>
      </>
    );
  }

  return (
    <>
      {typeSelect}
      <span className="cond-cell wide">
        <label htmlFor={ids.value}>Value</label>
        <DraftInput
          id={ids.value}
          inputMode={type === 'number' ? 'decimal' : undefined}
          value={value}
          format={(v) => (v === undefined || v === null ? '' : String(v))}
          parse={(text) => parseScalar(text, type)}
          placeholder={COMPARE_OPS.includes(operator) ? 'number or 2024-05-01' : undefined}
          onValue={onChange}
        />
      </span>
    </>
  );
}

/** Text as the chosen type; a number that does not parse stays text, so the API says what is wrong. */
function parseScalar(text: string, type: ScalarType): string | number | boolean {
  if (type === 'number') {
    const n = Number(text.trim());
    return text.trim() !== '' && Number.isFinite(n) ? n : text;
  }
  if (type === 'boolean') return text.trim() === 'true';
  return text;
}

/**
 * A text input over a parsed value that keeps what is typed ("1.", "a, ") while the value it
 * parses to goes out; a change from elsewhere (type switch, another rule removed) shows anew.
 */
function DraftInput({
  value,
  format,
  parse,
  onValue,
  ...rest
}: {
  value: unknown;
  format: (value: unknown) => string;
  parse: (text: string) => unknown;
  onValue: (value: unknown) => void;
} & Omit<InputHTMLAttributes<HTMLInputElement>, 'value' | 'onChange'>) {
  const [draft, setDraft] = useState(() => format(value));
  const [seen, setSeen] = useState(() => JSON.stringify(value));
  const current = JSON.stringify(value);
  if (current !== seen) {
    setSeen(current);
    if (JSON.stringify(parse(draft)) !== current) setDraft(format(value));
  }
  return (
    <input
      {...rest}
      type="text"
      value={draft}
      onChange={(e) => {
        const next = parse(e.target.value);
        setDraft(e.target.value);
        setSeen(JSON.stringify(next));
        onValue(next);
      }}
    />
  );
}

/** A condition in one line of words, for lists and workflow trees. */
export function describeCondition(node: unknown, segmentName?: (id: string) => string): string {
  if (typeof node !== 'object' || node === null) return String(node);
  const n = node as ConditionNode;
  if (isGroup(n)) {
    const parts = (n.conditions ?? []).map((c) => describeCondition(c, segmentName));
    if (parts.length === 0) return 'everyone';
    const joined = parts.join(n.logic === 'OR' ? ' or ' : ' and ');
    return parts.length > 1 ? `(${joined})` : joined;
  }
  const words = OPERATOR_WORDS[n.operator] ?? n.operator;
  const v = n.value as Record<string, unknown> | unknown;
  let value = '';
  if (v !== undefined && v !== null) {
    if (Array.isArray(v)) value = ` ${v.map((x) => JSON.stringify(x)).join(', ')}`;
    else if (typeof v === 'object') {
      const o = v as Record<string, unknown>;
      value =
        'count' in o
          ? ` ${String(o.count)} times${o.amount ? ` within ${String(o.amount)} ${String(o.unit)}` : ''}`
          : ` ${String(o.amount)} ${String(o.unit)}`;
    } else if (n.field === 'segment' && segmentName) value = ` ${segmentName(String(v))}`;
    else value = ` ${JSON.stringify(v)}`;
  }
  const field = n.field === 'segment' ? 'member of segment' : n.field;
  if (n.field === 'segment') return `${n.operator === 'in' ? 'in' : 'not in'} segment${value}`;
  return `${field} ${words}${value}`;
}
