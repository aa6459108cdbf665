import { useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import type { components } from '../api/schema';
import { describeCondition } from '../conditions';
import {
  DeleteAskingFirst,
  InputField,
  NameAndDescription,
  NameList,
  SelectField,
  useAction,
} from '../form';
import { PagedTable, Table, usePagedList } from '../list';
import { segmentNamer, useEventNames, useSegmentChoices } from '../segment-data';
import {
  asApiError,
  Badge,
  ErrorMessage,
  Field,
  Json,
  PageTitle,
  Show,
  useLoad,
  when,
} from '../ui';
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
  const list = usePagedList(
    (cursor) =>
      unwrap(api.GET('/workflows', { params: { query: { limit: PAGE_SIZE, cursor } } })).then(
        (r) => r.data,
      ),
    [],
  );
  const segmentName = segmentNamer(useSegmentChoices());
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
      <PagedTable
        list={list}
        label="Workflows"
        empty="No workflows yet."
        columns={['Name', 'Trigger', 'Enabled', 'Steps', 'Running', 'Completed', 'Updated']}
        row={(w) => (
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
        )}
      />
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
  const toggle = useAction();
  return (
    <>
      <button
        type="button"
        disabled={toggle.busy}
        onClick={() =>
          toggle.run(async () => {
            await unwrap(
              api.PATCH('/workflows/{id}', {
                params: { path: { id: workflow.id } },
                body: { enabled: !workflow.enabled },
              }),
            );
            onChanged();
          })
        }
      >
        {workflow.enabled ? 'Disable' : 'Enable'}
      </button>
      <ErrorMessage error={toggle.error} />
    </>
  );
}

export function WorkflowPage({ id }: { id: string }) {
  const state = useLoad(() => loadWorkflow(id), [id]);
  const segmentName = segmentNamer(useSegmentChoices());
  const [, navigate] = useLocation();
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
              <DeleteAskingFirst
                question="Delete this workflow? Its running executions are cancelled."
                confirm="Yes, delete workflow"
                remove={async () => {
                  await unwrap(api.DELETE('/workflows/{id}', { params: { path: { id: w.id } } }));
                  navigate('/workflows');
                }}
              />
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
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/workflows/{id}/executions', {
          params: {
            path: { id: workflowId },
            query: { limit: PAGE_SIZE, cursor, status: status || undefined },
          },
        }),
      ).then((r) => r.data),
    [workflowId, status],
  );
  return (
    <section aria-labelledby="executions-heading">
      <h2 id="executions-heading">Executions</h2>
      <div className="filters">
        <SelectField
          label="Execution status"
          value={status}
          onChange={setStatus}
          choices={EXECUTION_STATUSES}
          blank="Any"
        />
        <button type="button" onClick={list.state.reload}>
          Refresh
        </button>
      </div>
      <PagedTable
        list={list}
        label="Executions"
        empty={`No executions${status ? ` with status ${status}` : ''}.`}
        columns={['Started', 'Status', 'Contact', 'Steps run', 'Finished']}
        row={(x) => (
          <tr key={x.id}>
            <td>
              <Link href={`/workflows/${workflowId}/executions/${x.id}`}>{when(x.startedAt)}</Link>
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
        )}
      />
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
  const cancel = useAction();
  const runs = useMemo(
    () => new Map((state.data?.steps ?? []).map((s) => [s.stepId, s] as const)),
    [state.data],
  );
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
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    cancel.run(async () => {
                      await unwrap(
                        api.POST('/workflows/{id}/executions/{executionId}/cancel', {
                          params: { path: { id, executionId } },
                        }),
                      );
                      state.reload();
                    })
                  }
                >
                  Cancel execution
                </button>
              )}
            </div>
            <ErrorMessage error={cancel.error} />
            <h2>Steps run</h2>
            {x.steps.length === 0 ? (
              <p>No step has run yet.</p>
            ) : (
              <Table columns={['Step', 'Type', 'Status', 'Started', 'Finished', 'Output or error']}>
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
              </Table>
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
  const save = useAction();
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
    save.setError(undefined);
    if (on) {
      setStepsText(JSON.stringify(steps, null, 2));
    } else if (parsed.steps) {
      setSteps(parsed.steps);
    } else {
      save.setError(asApiError(new Error(`Fix the JSON to go back: ${parsed.problem}`)));
      return;
    }
    setAdvanced(on);
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const toSave = advanced ? parsed.steps : steps;
    if (!toSave) {
      save.setError(asApiError(new Error(parsed.problem)));
      return;
    }
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
    void save.run(async () => {
      const saved = initial
        ? await unwrap(api.PATCH('/workflows/{id}', { params: { path: { id: initial.id } }, body }))
        : await unwrap(api.POST('/workflows', { body }));
      navigate(`/workflows/${saved.data.id}`);
    });
  };

  return (
    <form className="form-stack" onSubmit={submit}>
      <NameAndDescription
        name={name}
        description={description}
        onName={setName}
        onDescription={setDescription}
      />
      <SelectField label="Trigger" value={type} onChange={setType} choices={TRIGGERS} />
      {type === 'EVENT' && (
        <>
          <InputField
            label="Trigger event name"
            type="text"
            list="workflow-event-names"
            required
            value={event}
            onChange={setEvent}
          />
          <NameList id="workflow-event-names" names={eventNames} />
        </>
      )}
      {(type === 'SEGMENT_ENTRY' || type === 'SEGMENT_EXIT') && (
        <SelectField
          label="Trigger segment"
          value={segmentId}
          onChange={setSegmentId}
          choices={segments.map((s) => [s.id, s.name] as const)}
          blank="Choose a segment"
        />
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
      <ErrorMessage error={save.error} />
      <div className="cond-row">
        <button type="submit" disabled={save.busy}>
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
