import { useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import { InputField, SelectField, useAction } from '../form';
import { PagedTable, usePagedList } from '../list';
import { Badge, ErrorMessage, PageTitle, Show, useLoad, when } from '../ui';
import type { operations } from '../api/schema';
import { ContactEditor, SuppressionControl } from './contact-edit';
import { ContactImport } from './contact-import';

type ExportQuery = NonNullable<operations['contacts_export']['parameters']['query']>;

/** GET /contacts/export with the list's filters: the browser streams the CSV to a file. */
function exportHref(query: ExportQuery): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.set(key, String(value));
  }
  const text = params.toString();
  return `/contacts/export${text ? `?${text}` : ''}`;
}

const PAGE_SIZE = 50;

/** One contact by email: POST /contacts, then its page. */
function AddContact() {
  const [email, setEmail] = useState('');
  const add = useAction();
  const [, navigate] = useLocation();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void add.run(async () => {
      const created = await unwrap(api.POST('/contacts', { body: { email: email.trim() } }));
      navigate(`/contacts/${created.data.id}`);
    });
  };
  return (
    <details className="add">
      <summary>Add a contact</summary>
      <form className="filters" onSubmit={submit}>
        <InputField label="Email address" type="email" required value={email} onChange={setEmail} />
        <button type="submit">Add contact</button>
      </form>
      <ErrorMessage error={add.error} />
    </details>
  );
}

const SUBSCRIPTIONS = [
  ['true', 'Subscribed'],
  ['false', 'Unsubscribed'],
] as const;

export function ContactsPage() {
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [subscribed, setSubscribed] = useState<'' | 'true' | 'false'>('');
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/contacts', {
          params: {
            query: {
              limit: PAGE_SIZE,
              cursor,
              search: applied || undefined,
              subscribed: subscribed === '' ? undefined : subscribed === 'true',
            },
          },
        }),
      ).then((r) => r.data),
    [applied, subscribed],
  );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setApplied(search.trim());
  };

  return (
    <>
      <PageTitle
        actions={
          <a
            className="button"
            download="contacts.csv"
            href={exportHref({
              search: applied || undefined,
              subscribed: subscribed === '' ? undefined : subscribed === 'true',
            })}
          >
            Export CSV
          </a>
        }
      >
        Contacts
      </PageTitle>
      <AddContact />
      <ContactImport onFinished={list.state.reload} />
      <form className="filters" role="search" onSubmit={submit}>
        <InputField label="Search by email" type="search" value={search} onChange={setSearch} />
        <SelectField
          label="Subscription"
          value={subscribed}
          onChange={setSubscribed}
          choices={SUBSCRIPTIONS}
          blank="All"
        />
        <button type="submit">Search</button>
      </form>
      <PagedTable
        list={list}
        label="Contacts"
        empty="No contacts match."
        caption="Contacts, newest first"
        columns={['Email', 'Status', 'Created']}
        row={(c) => (
          <tr key={c.id}>
            <td>
              <Link href={`/contacts/${c.id}`}>{c.email}</Link>
            </td>
            <td>
              <Badge
                value={c.suppressed ? 'Suppressed' : c.subscribed ? 'Subscribed' : 'Unsubscribed'}
              />
            </td>
            <td>{when(c.createdAt)}</td>
          </tr>
        )}
      />
    </>
  );
}

async function loadContact(id: string) {
  const [contact, events, emails] = await Promise.all([
    unwrap(api.GET('/contacts/{id}', { params: { path: { id } } })),
    unwrap(api.GET('/events', { params: { query: { contactId: id, limit: 20 } } })),
    unwrap(api.GET('/emails', { params: { query: { contactId: id, limit: 20 } } })),
  ]);
  return { contact: contact.data, events: events.data.items, emails: emails.data.items };
}

export function ContactPage({ id }: { id: string }) {
  const state = useLoad(() => loadContact(id), [id]);
  const [, navigate] = useLocation();
  const action = useAction();
  const act = (run: () => Promise<unknown>, after: () => void) =>
    action.run(async () => {
      await run();
      after();
    });

  return (
    <Show state={state}>
      {({ contact, events, emails }) => (
        <>
          <PageTitle
            actions={
              <>
                <button
                  type="button"
                  onClick={() =>
                    act(
                      () =>
                        unwrap(
                          api.PATCH('/contacts/{id}', {
                            params: { path: { id } },
                            body: { subscribed: !contact.subscribed },
                          }),
                        ),
                      state.reload,
                    )
                  }
                >
                  {contact.subscribed ? 'Unsubscribe' : 'Subscribe'}
                </button>
                <button
                  type="button"
                  className="danger"
                  onClick={() =>
                    window.confirm(`Delete ${contact.email}?`) &&
                    act(
                      () => unwrap(api.DELETE('/contacts/{id}', { params: { path: { id } } })),
                      () => navigate('/contacts'),
                    )
                  }
                >
                  Delete
                </button>
              </>
            }
          >
            {contact.email}
          </PageTitle>
          <ErrorMessage error={action.error} />
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Badge value={contact.subscribed ? 'Subscribed' : 'Unsubscribed'} />{' '}
              {contact.suppressed && <Badge value="Suppressed" />}
            </dd>
            <dt>Created</dt>
            <dd>{when(contact.createdAt)}</dd>
            <dt>Updated</dt>
            <dd>{when(contact.updatedAt)}</dd>
          </dl>
          <ContactEditor contact={contact} onSaved={state.reload} />
          <SuppressionControl contact={contact} onChanged={state.reload} />
          <h2>Emails</h2>
          {emails.length === 0 ? (
            <p>No emails.</p>
          ) : (
            <ul className="plain">
              {emails.map((e) => (
                <li key={e.id}>
                  <Badge value={e.status} /> <Link href={`/emails/${e.id}`}>{e.subject}</Link>{' '}
                  <span className="muted">{when(e.queuedAt)}</span>
                </li>
              ))}
            </ul>
          )}
          <h2>Events</h2>
          {events.length === 0 ? (
            <p>No events.</p>
          ) : (
            <ul className="plain">
              {events.map((e) => (
                <li key={e.id}>
                  <strong>{e.name}</strong> <span className="muted">{when(e.createdAt)}</span>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </Show>
  );
}
