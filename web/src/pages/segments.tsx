import { useEffect, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import {
  ConditionBuilder,
  describeCondition,
  emptyCondition,
  type ConditionGroup,
} from '../conditions';
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

const PAGE_SIZE = 50;

/** Segments of the project, for membership rules (by name) and for the list page. */
export function useSegmentChoices(exceptId?: string) {
  const state = useLoad(
    () =>
      unwrap(api.GET('/segments', { params: { query: { limit: 100 } } })).then((r) => r.data.items),
    [],
  );
  return (state.data ?? [])
    .filter((s) => s.id !== exceptId)
    .map((s) => ({ id: s.id, name: s.name }));
}

export function useEventNames(): string[] {
  const state = useLoad(
    () =>
      unwrap(api.GET('/events/names', { params: { query: { limit: 100 } } })).then((r) =>
        r.data.items.map((n) => n.name),
      ),
    [],
  );
  return state.data ?? [];
}

export function SegmentsPage() {
  const paging = useCursor('');
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/segments', { params: { query: { limit: PAGE_SIZE, cursor: paging.cursor } } }),
      ).then((r) => r.data),
    [paging.cursor],
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
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No segments yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Condition</th>
                      <th scope="col">Members</th>
                      <th scope="col">Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((s) => (
                      <tr key={s.id}>
                        <td>
                          <Link href={`/segments/${s.id}`}>{s.name}</Link>
                        </td>
                        <td>{describeCondition(s.condition)}</td>
                        <td>{s.memberCount.toLocaleString()}</td>
                        <td>{when(s.updatedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Segments" />
          </>
        )}
      </Show>
    </>
  );
}

/**
 * The live recipient count: POST /segments/preview, 400 ms after the last change, the latest
 * answer winning. An invalid condition shows the API's message and the path it points at.
 */
export function useLiveCount(condition: ConditionGroup) {
  const key = JSON.stringify(condition);
  const [state, setState] = useState<{
    key?: string;
    count?: number;
    sample?: string[];
    error?: ApiError;
  }>({});
  useEffect(() => {
    let current = true;
    const timer = setTimeout(() => {
      unwrap(api.POST('/segments/preview', { body: { condition: JSON.parse(key) } })).then(
        (r) =>
          current &&
          setState({ key, count: r.data.count, sample: r.data.sample.map((c) => c.email) }),
        (e: unknown) => current && setState({ key, error: asApiError(e) }),
      );
    }, 400);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [key]);
  return { ...state, busy: state.key !== key };
}

export function LiveCount({ condition }: { condition: ConditionGroup }) {
  const live = useLiveCount(condition);
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
  const [error, setError] = useState<ApiError>();
  const [saving, setSaving] = useState(false);
  const [, navigate] = useLocation();
  const segments = useSegmentChoices(segmentId);
  const eventNames = useEventNames();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setSaving(true);
    const body = { name: name.trim(), description: description.trim() || null, condition };
    try {
      const saved = segmentId
        ? await unwrap(api.PATCH('/segments/{id}', { params: { path: { id: segmentId } }, body }))
        : await unwrap(api.POST('/segments', { body }));
      navigate(`/segments/${saved.data.id}`);
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
      <ErrorMessage error={error} />
      <div className="cond-row">
        <button type="submit" disabled={saving}>
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

function DeleteSegment({ id }: { id: string }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [, navigate] = useLocation();
  const remove = async () => {
    setError(undefined);
    try {
      await unwrap(api.DELETE('/segments/{id}', { params: { path: { id } } }));
      navigate('/segments');
    } catch (err) {
      setError(asApiError(err));
      setAsking(false);
    }
  };
  return (
    <div>
      {asking ? (
        <p className="cond-row">
          <span>Delete this segment? Workflows and campaigns that name it stop finding it.</span>
          <button type="button" className="danger" onClick={remove}>
            Yes, delete segment
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

export function SegmentPage({ id }: { id: string }) {
  const state = useLoad(() => loadSegment(id), [id]);
  const paging = useCursor(id);
  const members = useLoad(
    () =>
      unwrap(
        api.GET('/segments/{id}/contacts', {
          params: { path: { id }, query: { limit: PAGE_SIZE, cursor: paging.cursor } },
        }),
      ).then((r) => r.data),
    [id, paging.cursor],
  );
  const segments = useSegmentChoices();
  const segmentName = (sid: string) => segments.find((s) => s.id === sid)?.name ?? sid;
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
            <DeleteSegment id={s.id} />
          </>
        )}
      </Show>
      <h2>Members</h2>
      <Show state={members}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No contact matches this segment now.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Email</th>
                      <th scope="col">Subscribed</th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((c) => (
                      <tr key={c.id}>
                        <td>
                          <Link href={`/contacts/${c.id}`}>{c.email}</Link>
                        </td>
                        <td>
                          <Badge value={c.subscribed ? 'Subscribed' : 'Unsubscribed'} />
                        </td>
                        <td>{when(c.createdAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Members" />
          </>
        )}
      </Show>
    </>
  );
}
