import { useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import type { components } from '../api/schema';
import { describeCondition } from '../conditions';
import {
  asApiError,
  Badge,
  ErrorMessage,
  Field,
  Json,
  PageTitle,
  Pager,
  Show,
  useCursor,
  useLoad,
  when,
} from '../ui';
import { useEventNames, useSegmentChoices } from './segments';
import { StepsEditor } from './workflow-tree';

type Workflow = components['schemas']['WorkflowResponse'];
type TriggerType = components['schemas']['WorkflowTriggerType'];
type ExecutionStatus = components['schemas']['ExecutionStatus'];
type Step = Record<string, unknown> & { id?: string; type?: string };

const PAGE_SIZE = 50;
const EXECUTION_STATUSES: ExecutionStatus[] = [
  'RUNNING',
  'WAITING',
  'COMPLETED',
  'EXITED',
  'FAILED',
  'CANCELLED',
];

function triggerText(t: Workflow['trigger'], segmentName: (id: string) => string): string {
  switch (t.type) {
    case 'EVENT':
      return `event ${t.event ?? '?'}`;
    case 'SEGMENT_ENTRY':
      return `enters segment ${segmentName(t.segmentId ?? '')}`;
    case 'SEGMENT_EXIT':
      return `leaves segment ${segmentName(t.segmentId ?? '')}`;
    default:
      return 'started by hand (POST /workflows/{id}/executions)';
  }
}

export function WorkflowsPage() {
  const paging = useCursor('');
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/workflows', { params: { query: { limit: PAGE_SIZE, cursor: paging.cursor } } }),
      ).then((r) => r.data),
    [paging.cursor],
  );
  const segments = useSegmentChoices();
  const segmentName = (id: string) => segments.find((s) => s.id === id)?.name ?? id;
  return (
    <>
      <PageTitle
        actions={
          <Link className="button" href="/workflows/new">
            New workflow
          </Link>
        }
      >
        Workflows
      </PageTitle>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No workflows yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Trigger</th>
                      <th scope="col">Enabled</th>
                      <th scope="col">Steps</th>
                      <th scope="col">Running</th>
                      <th scope="col">Completed</th>
                      <th scope="col">Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((w) => (
                      <tr key={w.id}>
                        <td>
                          <Link href={`/workflows/${w.id}`}>{w.name}</Link>
                        </td>
                        <td>{triggerText(w.trigger, segmentName)}</td>
                        <td>
                          <Badge value={w.enabled ? 'Enabled' : 'Disabled'} />
                        </td>
                        <td>{w.steps.length}</td>
                        <td>{(w.stats.running + w.stats.waiting).toLocaleString()}</td>
                        <td>{w.stats.completed.toLocaleString()}</td>
                        <td>{when(w.updatedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Workflows" />
          </>
        )}
      </Show>
    </>
  );
}

/** One step in words (its branches are drawn below it by StepTree). */
function stepSummary(step: Step, segmentName: (id: string) => string): ReactNode {
  const s = step as Record<string, unknown>;
  const w = (o: unknown) => {
    const x = (o ?? {}) as { amount?: unknown; unit?: unknown };
    return `${String(x.amount)} ${String(x.unit)}`;
  };
  switch (step.type) {
    case 'SEND_EMAIL':
      return (
        <>
          template <Link href="/templates">{String(s.templateId)}</Link>
        </>
      );
    case 'DELAY':
      return `wait ${w(s)}`;
    case 'WAIT_FOR_EVENT':
      return `wait for event ${String(s.event)} (at most ${w(s.timeout)})`;
    case 'CONDITION':
      return `if ${describeCondition(s.condition, segmentName)}`;
    case 'UPDATE_CONTACT':
      return [
        s.data !== undefined ? `set data ${JSON.stringify(s.data)}` : '',
        s.subscribed !== undefined ? `subscribed = ${String(s.subscribed)}` : '',
      ]
        .filter(Boolean)
        .join(', ');
    case 'WEBHOOK':
      return `${String(s.method ?? 'POST')} ${String(s.url)}`;
    case 'EXIT':
      return 'end the execution';
    default:
      return JSON.stringify(step);
  }
}

/** Branch names per step type: then/else, with the words a reader expects. */
function branches(step: Step): [string, Step[]][] {
  const list = (v: unknown) => (Array.isArray(v) ? (v as Step[]) : []);
  if (step.type === 'CONDITION')
    return [
      ['Then (condition holds)', list(step.then)],
      ['Else', list(step.else)],
    ];
  if (step.type === 'WAIT_FOR_EVENT')
    return [
      ['Then (event came)', list(step.then)],
      ['Else (timed out)', list(step.else)],
    ];
  return [];
}

export interface StepRun {
  status: string;
  error: string | null;
}

/** The steps as a nested list: each branch indented under its step; run statuses when given. */
export function StepTree({
  steps,
  runs,
  segmentName = (id) => id,
  label = 'Steps',
}: {
  steps: Step[];
  runs?: Map<string, StepRun>;
  segmentName?: (id: string) => string;
  label?: string;
}) {
  if (steps.length === 0) return <p className="muted">No steps.</p>;
  return (
    <ol className="steps-tree" aria-label={label}>
      {steps.map((step, i) => {
        const run = step.id ? runs?.get(step.id) : undefined;
        return (
          <li key={step.id ?? i}>
            <div className="step">
              <span className="step-type">{String(step.type ?? '?')}</span>
              {step.id && <code className="muted">{step.id}</code>}{' '}
              {run && <Badge value={run.status} />}
              <div>{stepSummary(step, segmentName)}</div>
              {run?.error && <div className="error">{run.error}</div>}
            </div>
            {branches(step).map(([name, sub]) => (
              <div key={name}>
                <div className="branch-label">{name}</div>
                {sub.length === 0 ? (
                  <p className="muted">(nothing; goes on after this step)</p>
                ) : (
                  <StepTree
                    steps={sub}
                    runs={runs}
                    segmentName={segmentName}
                    label={`${name} of ${step.id ?? 'step'}`}
                  />
                )}
              </div>
            ))}
          </li>
        );
      })}
    </ol>
  );
}

const loadWorkflow = (id: string) =>
  unwrap(api.GET('/workflows/{id}', { params: { path: { id } } })).then((r) => r.data);

function EnableToggle({ workflow, onChanged }: { workflow: Workflow; onChanged: () => void }) {
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const toggle = async () => {
    setError(undefined);
    setBusy(true);
    try {
      await unwrap(
        api.PATCH('/workflows/{id}', {
          params: { path: { id: workflow.id } },
          body: { enabled: !workflow.enabled },
        }),
      );
      onChanged();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" onClick={toggle} disabled={busy}>
        {workflow.enabled ? 'Disable' : 'Enable'}
      </button>
      <ErrorMessage error={error} />
    </>
  );
}

function DeleteWorkflow({ id }: { id: string }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [, navigate] = useLocation();
  const remove = async () => {
    try {
      await unwrap(api.DELETE('/workflows/{id}', { params: { path: { id } } }));
      navigate('/workflows');
    } catch (err) {
      setError(asApiError(err));
      setAsking(false);
    }
  };
  return (
    <div>
      {asking ? (
        <p className="cond-row">
          <span>Delete this workflow? Its running executions are cancelled.</span>
          <button type="button" className="danger" onClick={remove}>
            Yes, delete workflow
          </button>
          <button type="button" onClick={() => setAsking(false)}>
            Keep it
          </button>
        </p>
      ) : (
        <button type="button" className="danger" onClick={() => setAsking(true)}>
          Delete
        </button>
      )}
      <ErrorMessage error={error} />
    </div>
  );
}

export function WorkflowPage({ id }: { id: string }) {
  const state = useLoad(() => loadWorkflow(id), [id]);
  const segments = useSegmentChoices();
  const segmentName = (sid: string) => segments.find((s) => s.id === sid)?.name ?? sid;
  return (
    <>
      <PageTitle
        actions={
          <Link className="button" href={`/workflows/${id}/edit`}>
            Edit
          </Link>
        }
      >
        {state.data?.name ?? 'Workflow'}
      </PageTitle>
      <Show state={state}>
        {(w) => (
          <>
            <dl className="facts">
              <dt>Status</dt>
              <dd>
                <Badge value={w.enabled ? 'Enabled' : 'Disabled'} />
              </dd>
              <dt>Trigger</dt>
              <dd>{triggerText(w.trigger, segmentName)}</dd>
              <dt>Re-entry</dt>
              <dd>{w.allowReentry ? 'allowed after the previous run ends' : 'once per contact'}</dd>
              <dt>Description</dt>
              <dd>{w.description || '—'}</dd>
              <dt>Executions</dt>
              <dd>
                {Object.entries(w.stats)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(' · ')}
              </dd>
            </dl>
            <div className="cond-row">
              <EnableToggle workflow={w} onChanged={state.reload} />
              <DeleteWorkflow id={w.id} />
            </div>
            <h2>Steps</h2>
            <StepTree steps={w.steps as Step[]} segmentName={segmentName} />
          </>
        )}
      </Show>
      <Executions workflowId={id} />
    </>
  );
}

function Executions({ workflowId }: { workflowId: string }) {
  const [status, setStatus] = useState<'' | ExecutionStatus>('');
  const paging = useCursor(status);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/workflows/{id}/executions', {
          params: {
            path: { id: workflowId },
            query: { limit: PAGE_SIZE, cursor: paging.cursor, status: status || undefined },
          },
        }),
      ).then((r) => r.data),
    [workflowId, paging.cursor, status],
  );
  return (
    <section aria-labelledby="executions-heading">
      <h2 id="executions-heading">Executions</h2>
      <div className="filters">
        <Field label="Execution status">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(e) => setStatus(e.target.value as '' | ExecutionStatus)}
            >
              <option value="">Any</option>
              {EXECUTION_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="button" onClick={state.reload}>
          Refresh
        </button>
      </div>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No executions{status ? ` with status ${status}` : ''}.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Started</th>
                      <th scope="col">Status</th>
                      <th scope="col">Contact</th>
                      <th scope="col">Steps run</th>
                      <th scope="col">Finished</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((x) => (
                      <tr key={x.id}>
                        <td>
                          <Link href={`/workflows/${workflowId}/executions/${x.id}`}>
                            {when(x.startedAt)}
                          </Link>
                        </td>
                        <td>
                          <Badge value={x.status} />
                        </td>
                        <td>
                          <Link href={`/contacts/${x.contactId}`} title={x.contactId}>
                            <code>{x.contactId.slice(0, 8)}</code>
                          </Link>
                        </td>
                        <td>{x.steps.length}</td>
                        <td>{when(x.finishedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Executions" />
          </>
        )}
      </Show>
    </section>
  );
}

export function ExecutionPage({ id, executionId }: { id: string; executionId: string }) {
  const workflow = useLoad(() => loadWorkflow(id), [id]);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/workflows/{id}/executions/{executionId}', {
          params: { path: { id, executionId } },
        }),
      ).then((r) => r.data),
    [id, executionId],
  );
  const contact = useLoad(
    () =>
      state.data
        ? unwrap(
            api.GET('/contacts/{id}', { params: { path: { id: state.data.contactId } } }),
          ).then((r) => r.data.email)
        : Promise.resolve(undefined),
    [state.data?.contactId],
  );
  const [error, setError] = useState<ApiError>();
  const runs = useMemo(
    () => new Map((state.data?.steps ?? []).map((s) => [s.stepId, s] as const)),
    [state.data],
  );
  const cancel = async () => {
    setError(undefined);
    try {
      await unwrap(
        api.POST('/workflows/{id}/executions/{executionId}/cancel', {
          params: { path: { id, executionId } },
        }),
      );
      state.reload();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <>
      <PageTitle>Execution</PageTitle>
      <p>
        <Link href={`/workflows/${id}`}>← {workflow.data?.name ?? 'Workflow'}</Link>
      </p>
      <Show state={state}>
        {(x) => (
          <>
            <dl className="facts">
              <dt>Status</dt>
              <dd>
                <Badge value={x.status} />
              </dd>
              <dt>Contact</dt>
              <dd>
                <Link href={`/contacts/${x.contactId}`}>{contact.data ?? x.contactId}</Link>
              </dd>
              <dt>Started</dt>
              <dd>{when(x.startedAt)}</dd>
              <dt>Finished</dt>
              <dd>{when(x.finishedAt)}</dd>
              <dt>Current step</dt>
              <dd>{x.currentStepId ?? '—'}</dd>
              <dt>Exit reason</dt>
              <dd>{x.exitReason ?? '—'}</dd>
            </dl>
            <div className="cond-row">
              <button type="button" onClick={state.reload}>
                Refresh
              </button>
              {(x.status === 'RUNNING' || x.status === 'WAITING') && (
                <button type="button" className="danger" onClick={cancel}>
                  Cancel execution
                </button>
              )}
            </div>
            <ErrorMessage error={error} />
            <h2>Steps run</h2>
            {x.steps.length === 0 ? (
              <p>No step has run yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Step</th>
                      <th scope="col">Type</th>
                      <th scope="col">Status</th>
                      <th scope="col">Started</th>
                      <th scope="col">Finished</th>
                      <th scope="col">Output or error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {x.steps.map((s, i) => (
                      <tr key={`${s.stepId}-${i}`}>
                        <td>
                          <code>{s.stepId}</code>
                        </td>
                        <td>{s.type}</td>
                        <td>
                          <Badge value={s.status} />
                        </td>
                        <td>{when(s.startedAt)}</td>
                        <td>{when(s.finishedAt)}</td>
                        <td>
                          {s.error ? (
                            <span className="error">{s.error}</span>
                          ) : s.output ? (
                            <Json value={s.output} />
                          ) : (
                            '—'
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            {workflow.data && (
              <>
                <h2>Path through the workflow</h2>
                <StepTree
                  steps={workflow.data.steps as Step[]}
                  runs={runs}
                  label="Workflow steps"
                />
              </>
            )}
          </>
        )}
      </Show>
    </>
  );
}

const TRIGGERS: [TriggerType, string][] = [
  ['EVENT', 'An event (tracked or system)'],
  ['SEGMENT_ENTRY', 'Entering a segment'],
  ['SEGMENT_EXIT', 'Leaving a segment'],
  ['MANUAL', 'Started by hand (API)'],
];

const EXAMPLE_STEPS = [
  { id: 'welcome', type: 'UPDATE_CONTACT', data: { onboarding: 'started' } },
  { id: 'wait', type: 'DELAY', amount: 1, unit: 'days' },
  {
    id: 'check',
    type: 'CONDITION',
    condition: {
      logic: 'AND',
      conditions: [{ field: 'event.purchase', operator: 'notTriggered' }],
    },
    then: [{ id: 'nudge', type: 'UPDATE_CONTACT', data: { nudged: true } }],
    else: [{ id: 'done', type: 'EXIT' }],
  },
];

/**
 * Name, trigger, enabled and re-entry as form controls; the steps as JSON (validated by the API,
 * whose 422 names the path: steps[2].then[0].templateId) with the tree drawn live from it.
 */
function WorkflowForm({ initial }: { initial?: Workflow }) {
  const [name, setName] = useState(initial?.name ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [type, setType] = useState<TriggerType>(initial?.trigger.type ?? 'EVENT');
  const [event, setEvent] = useState(initial?.trigger.event ?? '');
  const [segmentId, setSegmentId] = useState(initial?.trigger.segmentId ?? '');
  const [enabled, setEnabled] = useState(initial?.enabled ?? false);
  const [allowReentry, setAllowReentry] = useState(initial?.allowReentry ?? false);
  const [steps, setSteps] = useState<Step[]>(() =>
    initial ? (initial.steps as Step[]) : (EXAMPLE_STEPS as Step[]),
  );
  // The visual tree by default; the JSON text is the "advanced" view of the same steps.
  const [advanced, setAdvanced] = useState(false);
  const [stepsText, setStepsText] = useState('');
  const [error, setError] = useState<ApiError>();
  const [saving, setSaving] = useState(false);
  const [, navigate] = useLocation();
  const segments = useSegmentChoices();
  const eventNames = useEventNames();

  const parsed = useMemo((): { steps?: Step[]; problem?: string } => {
    try {
      const value: unknown = JSON.parse(stepsText);
      if (!Array.isArray(value)) return { problem: 'The steps must be a JSON array: [ {...}, … ]' };
      return { steps: value as Step[] };
    } catch (e) {
      return { problem: `Not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
    }
  }, [stepsText]);

  const toggleAdvanced = (on: boolean) => {
    setError(undefined);
    if (on) {
      setStepsText(JSON.stringify(steps, null, 2));
    } else if (parsed.steps) {
      setSteps(parsed.steps);
    } else {
      setError(asApiError(new Error(`Fix the JSON to go back: ${parsed.problem}`)));
      return;
    }
    setAdvanced(on);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    const toSave = advanced ? parsed.steps : steps;
    if (!toSave) {
      setError(asApiError(new Error(parsed.problem)));
      return;
    }
    setSaving(true);
    const trigger =
      type === 'EVENT'
        ? { type, event: event.trim() }
        : type === 'MANUAL'
          ? { type }
          : { type, segmentId: segmentId || undefined };
    const body = {
      name: name.trim(),
      description: description.trim() || null,
      enabled,
      allowReentry,
      trigger,
      steps: toSave,
    };
    try {
      const saved = initial
        ? await unwrap(api.PATCH('/workflows/{id}', { params: { path: { id: initial.id } }, body }))
        : await unwrap(api.POST('/workflows', { body }));
      navigate(`/workflows/${saved.data.id}`);
    } catch (err) {
      setError(asApiError(err));
      setSaving(false);
    }
  };

  return (
    <form className="form-stack" onSubmit={submit}>
      <Field label="Name">
        {(id) => (
          <input
            id={id}
            type="text"
            required
            value={name}
            onChange={(e) => setName(e.target.value)}
          />
        )}
      </Field>
      <Field label="Description (optional)">
        {(id) => (
          <input
            id={id}
            type="text"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        )}
      </Field>
      <Field label="Trigger">
        {(id) => (
          <select id={id} value={type} onChange={(e) => setType(e.target.value as TriggerType)}>
            {TRIGGERS.map(([v, text]) => (
              <option key={v} value={v}>
                {text}
              </option>
            ))}
          </select>
        )}
      </Field>
      {type === 'EVENT' && (
        <Field label="Trigger event name">
          {(id) => (
            <>
              <input
                id={id}
                type="text"
                list="workflow-event-names"
                required
                value={event}
                onChange={(e) => setEvent(e.target.value)}
              />
              <datalist id="workflow-event-names">
                {eventNames.map((n) => (
                  <option key={n} value={n} />
                ))}
              </datalist>
            </>
          )}
        </Field>
      )}
      {(type === 'SEGMENT_ENTRY' || type === 'SEGMENT_EXIT') && (
        <Field label="Trigger segment">
          {(id) => (
            <select id={id} value={segmentId} onChange={(e) => setSegmentId(e.target.value)}>
              <option value="">Choose a segment</option>
              {segments.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <label className="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
        Enabled (new triggers start executions)
      </label>
      <label className="check">
        <input
          type="checkbox"
          checked={allowReentry}
          onChange={(e) => setAllowReentry(e.target.checked)}
        />
        Allow a contact to run it again after its previous run ended
      </label>
      <fieldset>
        <legend>Steps</legend>
        <label className="check">
          <input
            type="checkbox"
            checked={advanced}
            onChange={(e) => toggleAdvanced(e.target.checked)}
          />
          Advanced: edit the steps as JSON
        </label>
        {advanced ? (
          <>
            <Field label="Steps (JSON)">
              {(id) => (
                <textarea
                  id={id}
                  className="json-editor"
                  spellCheck={false}
                  aria-describedby="steps-help"
                  value={stepsText}
                  onChange={(e) => setStepsText(e.target.value)}
                />
              )}
            </Field>
            <p className="muted" id="steps-help">
              Each step is {'{id, type, …}'}: SEND_EMAIL {'{templateId}'}, DELAY {'{amount, unit}'},
              WAIT_FOR_EVENT {'{event, timeout, then, else}'}, CONDITION {'{condition, then, else}'}
              , UPDATE_CONTACT {'{data, subscribed}'}, WEBHOOK {'{url, method, headers, body}'},
              EXIT. Keep step ids when editing: executions waiting at a step go on from it.
            </p>
            {parsed.problem ? (
              <p className="error" role="status">
                {parsed.problem}
              </p>
            ) : (
              <section aria-label="Steps preview">
                <h2>Preview</h2>
                <StepTree steps={parsed.steps ?? []} label="Steps preview" />
              </section>
            )}
          </>
        ) : (
          <StepsEditor
            steps={steps}
            onChange={setSteps}
            segments={segments}
            eventNames={eventNames}
          />
        )}
      </fieldset>
      <ErrorMessage error={error} />
      <div className="cond-row">
        <button type="submit" disabled={saving}>
          {initial ? 'Save workflow' : 'Create workflow'}
        </button>
        <Link href={initial ? `/workflows/${initial.id}` : '/workflows'}>Cancel</Link>
      </div>
    </form>
  );
}

export function NewWorkflowPage() {
  return (
    <>
      <PageTitle>New workflow</PageTitle>
      <WorkflowForm />
    </>
  );
}

export function EditWorkflowPage({ id }: { id: string }) {
  const state = useLoad(() => loadWorkflow(id), [id]);
  return (
    <>
      <PageTitle>Edit workflow</PageTitle>
      <Show state={state}>{(w) => <WorkflowForm initial={w} />}</Show>
    </>
  );
}
