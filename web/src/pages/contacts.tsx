import { useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import {
  asApiError,
  Badge,
  ErrorMessage,
  Field,
  PageTitle,
  Pager,
  Show,
  useCursor,
  useLoad,
  when,
} from '../ui';
import type { ApiError } from '../api/client';
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
  const [error, setError] = useState<ApiError>();
  const [, navigate] = useLocation();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    try {
      const created = await unwrap(api.POST('/contacts', { body: { email: email.trim() } }));
      navigate(`/contacts/${created.data.id}`);
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <details className="add">
      <summary>Add a contact</summary>
      <form className="filters" onSubmit={submit}>
        <Field label="Email address">
          {(id) => (
            <input
              id={id}
              type="email"
              required
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
          )}
        </Field>
        <button type="submit">Add contact</button>
      </form>
      <ErrorMessage error={error} />
    </details>
  );
}

export function ContactsPage() {
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [subscribed, setSubscribed] = useState<'' | 'true' | 'false'>('');
  const paging = useCursor(`${applied}|${subscribed}`);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/contacts', {
          params: {
            query: {
              limit: PAGE_SIZE,
              cursor: paging.cursor,
              search: applied || undefined,
              subscribed: subscribed === '' ? undefined : subscribed === 'true',
            },
          },
        }),
      ).then((r) => r.data),
    [paging.cursor, applied, subscribed],
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
      <ContactImport onFinished={state.reload} />
      <form className="filters" role="search" onSubmit={submit}>
        <Field label="Search by email">
          {(id) => (
            <input
              id={id}
              type="search"
              value={search}
              onChange={(e) => setSearch(e.target.value)}
            />
          )}
        </Field>
        <Field label="Subscription">
          {(id) => (
            <select
              id={id}
              value={subscribed}
              onChange={(e) => setSubscribed(e.target.value as '' | 'true' | 'false')}
            >
              <option value="">All</option>
              <option value="true">Subscribed</option>
              <option value="false">Unsubscribed</option>
            </select>
          )}
        </Field>
        <button type="submit">Search</button>
      </form>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No contacts match.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Contacts, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Email</th>
                      <th scope="col">Status</th>
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
                          <Badge
                            value={
                              c.suppressed
                                ? 'Suppressed'
                                : c.subscribed
                                  ? 'Subscribed'
                                  : 'Unsubscribed'
                            }
                          />
                        </td>
                        <td>{when(c.createdAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Contacts" />
          </>
        )}
      </Show>
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
  const [actionError, setActionError] = useState<ApiError>();

  const act = async (run: () => Promise<unknown>, after: () => void) => {
    setActionError(undefined);
    try {
      await run();
      after();
    } catch (e) {
      setActionError(asApiError(e));
    }
  };

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
          <ErrorMessage error={actionError} />
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
