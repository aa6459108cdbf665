import { useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import { InputField, NameList } from '../form';
import { PagedTable, usePagedList } from '../list';
import { useEventNames } from '../segment-data';
import { PageTitle, when } from '../ui';

export function EventsPage() {
  const [name, setName] = useState('');
  const [applied, setApplied] = useState('');
  const names = useEventNames();
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/events', {
          params: { query: { limit: 50, cursor, name: applied || undefined } },
        }),
      ).then((r) => r.data),
    [applied],
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setApplied(name.trim());
  };
  return (
    <>
      <PageTitle>Events</PageTitle>
      <form className="filters" onSubmit={submit}>
        <InputField label="Event name" list="event-names" value={name} onChange={setName} />
        <NameList id="event-names" names={names} />
        <button type="submit">Filter</button>
      </form>
      <PagedTable
        list={list}
        label="Events"
        empty="No events match."
        columns={['Event', 'Contact', 'Data', 'When']}
        row={(e) => (
          <tr key={e.id}>
            <td>{e.name}</td>
            <td>{e.contactId ? <Link href={`/contacts/${e.contactId}`}>Contact</Link> : '—'}</td>
            <td>
              <code className="clip">{JSON.stringify(e.data ?? {})}</code>
            </td>
            <td>{when(e.createdAt)}</td>
          </tr>
        )}
      />
    </>
  );
}
