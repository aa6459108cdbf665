import { useId, useState, type ReactNode } from 'react';
import { api, unwrap } from '../api/client';
import {
  ConditionBuilder,
  emptyCondition,
  isGroup,
  type ConditionGroup,
  type ConditionNode,
} from '../conditions';
import { NameList } from '../form';
import { useLoad } from '../ui';
import './edit-forms.css';

/** A step as the API takes it: `{id, type, …}`, branches under `then` / `else`. */
export type Step = Record<string, unknown> & { id?: string; type?: string };

const STEP_TYPES: [string, string][] = [
  ['SEND_EMAIL', 'Send an email'],
  ['DELAY', 'Wait (delay)'],
  ['WAIT_FOR_EVENT', 'Wait for an event'],
  ['CONDITION', 'Condition (yes / no)'],
  ['UPDATE_CONTACT', 'Update the contact'],
  ['WEBHOOK', 'Call a webhook'],
  ['EXIT', 'Exit'],
];
const UNITS = ['seconds', 'minutes', 'hours', 'days'];
const METHODS = ['POST', 'PUT', 'PATCH', 'GET'];

let idSeq = 0;
/** A new step's id, made here so it stays stable across saves (executions follow step ids). */
function newStepId(type: string): string {
  idSeq += 1;
  return `${type.toLowerCase().replace(/_/g, '-')}-${Date.now().toString(36)}${idSeq}`;
}

/** A new step of a type, with the fields the API requires filled with harmless defaults. */
export function newStep(type: string): Step {
  const id = newStepId(type);
  switch (type) {
    case 'SEND_EMAIL':
      return { id, type, templateId: '' };
    case 'DELAY':
      return { id, type, amount: 1, unit: 'days' };
    case 'WAIT_FOR_EVENT':
      return { id, type, event: '', timeout: { amount: 1, unit: 'days' }, then: [], else: [] };
    case 'CONDITION':
      return { id, type, condition: emptyCondition(), then: [], else: [] };
    case 'UPDATE_CONTACT':
      return { id, type, data: {} };
    case 'WEBHOOK':
      return { id, type, url: 'https://', method: 'POST' };
    default:
      return { id, type };
  }
}

const list = (value: unknown): Step[] => (Array.isArray(value) ? (value as Step[]) : []);

/** The branches a step has, with the words a reader expects. */
function branchesOf(step: Step): [key: 'then' | 'else', label: string][] {
  if (step.type === 'CONDITION')
    return [
      ['then', 'Yes: the condition holds'],
      ['else', 'No'],
    ];
  if (step.type === 'WAIT_FOR_EVENT')
    return [
      ['then', 'The event came'],
      ['else', 'Timed out'],
    ];
  return [];
}

interface Choices {
  templates: { id: string; name: string }[];
  segments: { id: string; name: string }[];
  eventNames: string[];
  /** The id of the datalist of event names the event inputs offer. */
  eventList: string;
}

/**
 * The workflow's steps as an editable tree: each step a card with its own fields, its branches
 * (a condition's yes / no, a wait's event / timeout) nested under it, and buttons to add, move
 * and remove steps at every level. It edits the API's JSON directly, so what it holds is what is
 * saved; the API validates and its 422 names the path (steps[2].then[0].templateId).
 */
export function StepsEditor({
  steps,
  onChange,
  segments,
  eventNames,
}: {
  steps: Step[];
  onChange: (steps: Step[]) => void;
  segments: { id: string; name: string }[];
  eventNames: string[];
}) {
  const templates = useLoad(
    () =>
      unwrap(api.GET('/templates', { params: { query: { limit: 100 } } })).then((r) =>
        r.data.items.map((t) => ({ id: t.id, name: t.name })),
      ),
    [],
  );
  const eventList = useId();
  const choices: Choices = { templates: templates.data ?? [], segments, eventNames, eventList };
  return (
    <div className="steps-editor">
      <NameList id={eventList} names={eventNames} />
      <StepList steps={steps} onChange={onChange} where="the workflow" choices={choices} top />
    </div>
  );
}

function StepList({
  steps,
  onChange,
  where,
  choices,
  top,
}: {
  steps: Step[];
  onChange: (steps: Step[]) => void;
  where: string;
  choices: Choices;
  top?: boolean;
}) {
  const move = (from: number, to: number) => {
    const next = [...steps];
    const [step] = next.splice(from, 1);
    next.splice(to, 0, step);
    onChange(next);
  };
  return (
    <>
      {steps.length === 0 ? (
        <p className="muted">
          {top ? 'No steps yet.' : '(nothing here; the flow goes on after the branching step)'}
        </p>
      ) : (
        <ol className="step-tree" aria-label={`Steps of ${where}`}>
          {steps.map((step, i) => (
            <li key={step.id ?? i} className="step-node">
              <StepCard
                step={step}
                number={i + 1}
                onChange={(s) => onChange(steps.map((x, j) => (j === i ? s : x)))}
                onRemove={() => onChange(steps.filter((_, j) => j !== i))}
                onUp={i > 0 ? () => move(i, i - 1) : undefined}
                onDown={i < steps.length - 1 ? () => move(i, i + 1) : undefined}
                choices={choices}
              />
            </li>
          ))}
        </ol>
      )}
      <AddStep where={where} onAdd={(s) => onChange([...steps, s])} />
    </>
  );
}

function AddStep({ where, onAdd }: { where: string; onAdd: (step: Step) => void }) {
  const [type, setType] = useState('SEND_EMAIL');
  const id = useId();
  return (
    <div className="cond-row">
      <div className="cond-cell">
        <label htmlFor={id}>New step in {where}</label>
        <select id={id} value={type} onChange={(e) => setType(e.target.value)}>
          {STEP_TYPES.map(([v, text]) => (
            <option key={v} value={v}>
              {text}
            </option>
          ))}
        </select>
      </div>
      <button type="button" onClick={() => onAdd(newStep(type))}>
        Add step to {where}
      </button>
    </div>
  );
}

function StepCard({
  step,
  number,
  onChange,
  onRemove,
  onUp,
  onDown,
  choices,
}: {
  step: Step;
  number: number;
  onChange: (step: Step) => void;
  onRemove: () => void;
  onUp?: () => void;
  onDown?: () => void;
  choices: Choices;
}) {
  const name = step.id ?? `step ${number}`;
  const title = STEP_TYPES.find(([v]) => v === step.type)?.[1] ?? String(step.type);
  const set = (change: Record<string, unknown>) => onChange({ ...step, ...change });
  return (
    <div className="step-card" role="group" aria-label={`Step ${name}`}>
      <div>
        <span className="step-type">
          {number}. {title}
        </span>
        <code className="muted">{name}</code>
      </div>
      <StepFields step={step} set={set} name={name} choices={choices} />
      <div className="actions">
        <button type="button" className="small" onClick={onUp} disabled={!onUp}>
          Move up<span className="visually-hidden"> {name}</span>
        </button>
        <button type="button" className="small" onClick={onDown} disabled={!onDown}>
          Move down<span className="visually-hidden"> {name}</span>
        </button>
        <button type="button" className="small danger" onClick={onRemove}>
          Remove<span className="visually-hidden"> {name}</span>
        </button>
      </div>
      {branchesOf(step).map(([key, label]) => (
        <div key={key}>
          <div className="branch-label">{label}</div>
          <StepList
            steps={list(step[key])}
            onChange={(s) => set({ [key]: s })}
            where={`${name} (${key === 'then' ? 'yes' : 'no'})`}
            choices={choices}
          />
        </div>
      ))}
    </div>
  );
}

/** A labelled control in a step card. */
function Cell({
  label,
  children,
  wide,
}: {
  label: string;
  children: (id: string) => ReactNode;
  wide?: boolean;
}) {
  const id = useId();
  return (
    <div className={wide ? 'cond-cell wide' : 'cond-cell'}>
      <label htmlFor={id}>{label}</label>
      {children(id)}
    </div>
  );
}

function Duration({
  value,
  onChange,
  label,
}: {
  value: { amount?: unknown; unit?: unknown };
  onChange: (v: { amount: number; unit: string }) => void;
  label: string;
}) {
  const amount = Number(value.amount ?? 1);
  const unit = String(value.unit ?? 'days');
  return (
    <>
      <Cell label={`${label} amount`}>
        {(id) => (
          <input
            id={id}
            type="number"
            value={Number.isFinite(amount) ? amount : ''}
            onChange={(e) => onChange({ amount: Number(e.target.value), unit })}
          />
        )}
      </Cell>
      <Cell label={`${label} unit`}>
        {(id) => (
          <select id={id} value={unit} onChange={(e) => onChange({ amount, unit: e.target.value })}>
            {UNITS.map((u) => (
              <option key={u} value={u}>
                {u}
              </option>
            ))}
          </select>
        )}
      </Cell>
    </>
  );
}

/** The condition a CONDITION step holds, as a group the builder can edit (a lone rule is wrapped). */
function asGroup(value: unknown): ConditionGroup {
  if (!value || typeof value !== 'object') return emptyCondition();
  const node = value as ConditionNode;
  return isGroup(node) ? node : { logic: 'AND', conditions: [node] };
}

function StepFields({
  step,
  set,
  name,
  choices,
}: {
  step: Step;
  set: (change: Record<string, unknown>) => void;
  name: string;
  choices: Choices;
}) {
  switch (step.type) {
    case 'SEND_EMAIL': {
      const current = String(step.templateId ?? '');
      const known = choices.templates.some((t) => t.id === current);
      return (
        <div className="cond-row">
          <Cell label="Template" wide>
            {(id) => (
              <select id={id} value={current} onChange={(e) => set({ templateId: e.target.value })}>
                <option value="">Choose a template</option>
                {!known && current && <option value={current}>{current}</option>}
                {choices.templates.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            )}
          </Cell>
        </div>
      );
    }
    case 'DELAY':
      return (
        <div className="cond-row">
          <Duration
            label="Wait"
            value={{ amount: step.amount, unit: step.unit }}
            onChange={(d) => set({ amount: d.amount, unit: d.unit })}
          />
        </div>
      );
    case 'WAIT_FOR_EVENT':
      return (
        <div className="cond-row">
          <Cell label="Event name" wide>
            {(id) => (
              <input
                id={id}
                list={choices.eventList}
                value={String(step.event ?? '')}
                onChange={(e) => set({ event: e.target.value })}
              />
            )}
          </Cell>
          <Duration
            label="Timeout"
            value={(step.timeout ?? {}) as { amount?: unknown; unit?: unknown }}
            onChange={(timeout) => set({ timeout })}
          />
        </div>
      );
    case 'CONDITION':
      return (
        <ConditionBuilder
          value={asGroup(step.condition)}
          onChange={(condition) => set({ condition })}
          segments={choices.segments}
          eventNames={choices.eventNames}
          label={`Condition of ${name}`}
        />
      );
    case 'UPDATE_CONTACT':
      return <UpdateContactFields step={step} set={set} />;
    case 'WEBHOOK':
      return (
        <div className="cond-row">
          <Cell label="Method">
            {(id) => (
              <select
                id={id}
                value={String(step.method ?? 'POST')}
                onChange={(e) => set({ method: e.target.value })}
              >
                {METHODS.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            )}
          </Cell>
          <Cell label="URL" wide>
            {(id) => (
              <input
                id={id}
                type="url"
                value={String(step.url ?? '')}
                onChange={(e) => set({ url: e.target.value })}
              />
            )}
          </Cell>
          <Cell label="Body (Liquid, optional)" wide>
            {(id) => (
              <textarea
                id={id}
                rows={2}
                value={String(step.body ?? '')}
                onChange={(e) => set({ body: e.target.value || undefined })}
              />
            )}
          </Cell>
        </div>
      );
    case 'EXIT':
      return <p className="muted">Ends the execution here.</p>;
    default:
      return <pre className="json">{JSON.stringify(step, null, 2)}</pre>;
  }
}

/** `subscribed` as a three-way choice, `data` as JSON text (applied once it parses to an object). */
function UpdateContactFields({
  step,
  set,
}: {
  step: Step;
  set: (change: Record<string, unknown>) => void;
}) {
  const [text, setText] = useState(() => JSON.stringify(step.data ?? {}));
  const [problem, setProblem] = useState<string>();
  const problemId = useId();
  const subscribed = step.subscribed === undefined ? '' : String(step.subscribed);
  return (
    <div className="cond-row">
      <Cell label="Subscription">
        {(id) => (
          <select
            id={id}
            value={subscribed}
            onChange={(e) =>
              set({ subscribed: e.target.value === '' ? undefined : e.target.value === 'true' })
            }
          >
            <option value="">Leave as it is</option>
            <option value="true">Subscribe</option>
            <option value="false">Unsubscribe</option>
          </select>
        )}
      </Cell>
      <Cell label="Data to merge (JSON object)" wide>
        {(id) => (
          <input
            id={id}
            className="code"
            value={text}
            aria-invalid={problem ? true : undefined}
            aria-describedby={problem ? problemId : undefined}
            onChange={(e) => {
              setText(e.target.value);
              try {
                const value: unknown = JSON.parse(e.target.value || '{}');
                if (!value || typeof value !== 'object' || Array.isArray(value))
                  throw new Error('an object is expected: {"key": "value"}');
                setProblem(undefined);
                set({ data: value });
              } catch (err) {
                setProblem(err instanceof Error ? err.message : String(err));
              }
            }}
          />
        )}
      </Cell>
      {problem && (
        <p className="error" id={problemId}>
          Not applied: {problem}
        </p>
      )}
    </div>
  );
}
