import { useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import {
  ConditionBuilder,
  describeCondition,
  emptyCondition,
  type ConditionGroup,
} from '../conditions';
import { DeleteAskingFirst, NameAndDescription, useAction } from '../form';
import { PagedTable, usePagedList } from '../list';
import { segmentNamer, useEventNames, useSegmentChoices, useSegmentPreview } from '../segment-data';
import { Badge, ErrorMessage, Json, PageTitle, Show, useLoad, when } from '../ui';

const PAGE_SIZE = 50;

export function SegmentsPage() {
  const list = usePagedList(
    (cursor) =>
      unwrap(api.GET('/segments', { params: { query: { limit: PAGE_SIZE, cursor } } })).then(
        (r) => r.data,
      ),
    [],
  );
  return (
    <>
      <PageTitle
        actions={
          <Link className="button" href="/segments/new">
            New segment
          </Link>
        }
      >
        Segments
      </PageTitle>
      <PagedTable
        list={list}
        label="Segments"
        empty="No segments yet."
        columns={['Name', 'Condition', 'Members', 'Updated']}
        row={(s) => (
          <tr key={s.id}>
            <td>
              <Link href={`/segments/${s.id}`}>{s.name}</Link>
            </td>
            <td>{describeCondition(s.condition)}</td>
            <td>{s.memberCount.toLocaleString()}</td>
            <td>{when(s.updatedAt)}</td>
          </tr>
        )}
      />
    </>
  );
}

/**
 * The live count of contacts matching a condition being built: 400 ms after the last change. An
 * invalid condition shows the API's message and the path it points at.
 */
export function LiveCount({ condition }: { condition: ConditionGroup }) {
  const live = useSegmentPreview(condition, 400);
  return (
    <div className="live-count" aria-busy={live.busy}>
      <p role="status" aria-live="polite">
        {live.error
          ? 'The condition is not valid yet.'
          : live.count === undefined
            ? 'Counting…'
            : `${live.count.toLocaleString()} ${live.count === 1 ? 'contact matches' : 'contacts match'}${live.busy ? ' (updating…)' : ''}`}
      </p>
      {!live.error && live.sample && live.sample.length > 0 && (
        <p className="muted">Newest matches: {live.sample.slice(0, 5).join(', ')}</p>
      )}
      <ErrorMessage error={live.error} />
    </div>
  );
}

function SegmentForm({
  initial,
  segmentId,
}: {
  initial?: { name: string; description: string | null; condition: ConditionGroup };
  segmentId?: string;
}) {
  const [name, setName] = useState(initial?.name ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [condition, setCondition] = useState<ConditionGroup>(
    initial?.condition ?? emptyCondition(),
  );
  const save = useAction();
  const [, navigate] = useLocation();
  const segments = useSegmentChoices(segmentId);
  const eventNames = useEventNames();

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = { name: name.trim(), description: description.trim() || null, condition };
    void save.run(async () => {
      const saved = segmentId
        ? await unwrap(api.PATCH('/segments/{id}', { params: { path: { id: segmentId } }, body }))
        : await unwrap(api.POST('/segments', { body }));
      navigate(`/segments/${saved.data.id}`);
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
      <ConditionBuilder
        value={condition}
        onChange={setCondition}
        segments={segments}
        eventNames={eventNames}
        label="Contacts who match"
      />
      <LiveCount condition={condition} />
      <details>
        <summary>The condition as JSON (what the API receives)</summary>
        <Json value={condition} />
      </details>
      <ErrorMessage error={save.error} />
      <div className="cond-row">
        <button type="submit" disabled={save.busy}>
          {segmentId ? 'Save segment' : 'Create segment'}
        </button>
        <Link href={segmentId ? `/segments/${segmentId}` : '/segments'}>Cancel</Link>
      </div>
    </form>
  );
}

export function NewSegmentPage() {
  return (
    <>
      <PageTitle>New segment</PageTitle>
      <SegmentForm />
    </>
  );
}

const loadSegment = (id: string) =>
  unwrap(api.GET('/segments/{id}', { params: { path: { id } } })).then((r) => r.data);

export function EditSegmentPage({ id }: { id: string }) {
  const state = useLoad(() => loadSegment(id), [id]);
  return (
    <>
      <PageTitle>Edit segment</PageTitle>
      <Show state={state}>
        {(s) => (
          <SegmentForm
            segmentId={s.id}
            initial={{
              name: s.name,
              description: s.description,
              condition: s.condition as unknown as ConditionGroup,
            }}
          />
        )}
      </Show>
    </>
  );
}

export function SegmentPage({ id }: { id: string }) {
  const state = useLoad(() => loadSegment(id), [id]);
  const [, navigate] = useLocation();
  const members = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/segments/{id}/contacts', {
          params: { path: { id }, query: { limit: PAGE_SIZE, cursor } },
        }),
      ).then((r) => r.data),
    [id],
  );
  const segmentName = segmentNamer(useSegmentChoices());
  return (
    <>
      <PageTitle
        actions={
          <Link className="button" href={`/segments/${id}/edit`}>
            Edit
          </Link>
        }
      >
        {state.data?.name ?? 'Segment'}
      </PageTitle>
      <Show state={state}>
        {(s) => (
          <>
            <dl className="facts">
              <dt>Description</dt>
              <dd>{s.description || '—'}</dd>
              <dt>Condition</dt>
              <dd>{describeCondition(s.condition, segmentName)}</dd>
              <dt>Members</dt>
              <dd>{s.memberCount.toLocaleString()}</dd>
              <dt>Updated</dt>
              <dd>{when(s.updatedAt)}</dd>
            </dl>
            <DeleteAskingFirst
              question="Delete this segment? Workflows and campaigns that name it stop finding it."
              confirm="Yes, delete segment"
              remove={async () => {
                await unwrap(api.DELETE('/segments/{id}', { params: { path: { id: s.id } } }));
                navigate('/segments');
              }}
            />
          </>
        )}
      </Show>
      <h2>Members</h2>
      <PagedTable
        list={members}
        label="Members"
        empty="No contact matches this segment now."
        columns={['Email', 'Subscribed', 'Created']}
        row={(c) => (
          <tr key={c.id}>
            <td>
              <Link href={`/contacts/${c.id}`}>{c.email}</Link>
            </td>
            <td>
              <Badge value={c.subscribed ? 'Subscribed' : 'Unsubscribed'} />
            </td>
            <td>{when(c.createdAt)}</td>
          </tr>
        )}
      />
    </>
  );
}
