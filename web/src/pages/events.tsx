import { useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import { Field, PageTitle, Pager, Show, useCursor, useLoad, when } from '../ui';

export function EventsPage() {
  const [name, setName] = useState('');
  const [applied, setApplied] = useState('');
  const paging = useCursor(applied);
  const names = useLoad(() => unwrap(api.GET('/events/names', { params: { query: { limit: 100 } } })).then((r) => r.data.items), []);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/events', {
          params: { query: { limit: 50, cursor: paging.cursor, name: applied || undefined } },
        }),
      ).then((r) => r.data),
    [paging.cursor, applied],
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setApplied(name.trim());
  };
  return (
    <>
      <PageTitle>Events</PageTitle>
      <form className="filters" onSubmit={submit}>
        <Field label="Event name">
          {(id) => (
            <input
              id={id}
              list="event-names"
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
          )}
        </Field>
        <datalist id="event-names">
          {(names.data ?? []).map((n) => (
            <option key={n.name} value={n.name} />
          ))}
        </datalist>
        <button type="submit">Filter</button>
      </form>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No events match.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Event</th>
                      <th scope="col">Contact</th>
                      <th scope="col">Data</th>
                      <th scope="col">When</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((e) => (
                      <tr key={e.id}>
                        <td>{e.name}</td>
                        <td>
                          {e.contactId ? <Link href={`/contacts/${e.contactId}`}>Contact</Link> : '—'}
                        </td>
                        <td>
                          <code className="clip">{JSON.stringify(e.data ?? {})}</code>
                        </td>
                        <td>{when(e.createdAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Events" />
          </>
        )}
      </Show>
    </>
  );
}
