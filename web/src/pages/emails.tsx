import { useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import type { SchemaEmailStatus } from '../api/schema';
import { Badge, Field, PageTitle, Pager, Show, useCursor, useLoad, when } from '../ui';
import { DeliveryDetails, EmailPreview } from './email-content';

const STATUSES: SchemaEmailStatus[] = [
  'QUEUED',
  'SENDING',
  'SENT',
  'FAILED',
  'BOUNCED',
  'SUPPRESSED',
  'CANCELLED',
  'COMPLAINED',
];

export function EmailsPage() {
  const [status, setStatus] = useState<SchemaEmailStatus | ''>('');
  const paging = useCursor(status);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/emails', {
          params: { query: { limit: 50, cursor: paging.cursor, status: status || undefined } },
        }),
      ).then((r) => r.data),
    [paging.cursor, status],
  );
  return (
    <>
      <PageTitle>Emails</PageTitle>
      <div className="filters">
        <Field label="Status">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(e) => setStatus(e.target.value as SchemaEmailStatus | '')}
            >
              <option value="">All</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No emails match.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">To</th>
                      <th scope="col">Subject</th>
                      <th scope="col">Status</th>
                      <th scope="col">Queued</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((e) => (
                      <tr key={e.id}>
                        <td>{e.to}</td>
                        <td>
                          <Link href={`/emails/${e.id}`}>{e.subject || '(no subject)'}</Link>
                        </td>
                        <td>
                          <Badge value={e.status} />
                        </td>
                        <td>{when(e.queuedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Emails" />
          </>
        )}
      </Show>
    </>
  );
}

export function EmailPage({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/emails/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  return (
    <Show state={state}>
      {(e) => (
        <>
          <PageTitle>{e.subject || '(no subject)'}</PageTitle>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Badge value={e.status} />
            </dd>
            <dt>To</dt>
            <dd>
              {e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.to}</Link> : e.to}
            </dd>
            <dt>From</dt>
            <dd>{e.from}</dd>
            <dt>Source</dt>
            <dd>{e.source}</dd>
            <dt>Queued</dt>
            <dd>{when(e.queuedAt)}</dd>
            <dt>Sent</dt>
            <dd>{when(e.sentAt)}</dd>
            <dt>Opens / clicks</dt>
            <dd>
              {e.opens} / {e.clicks}
            </dd>
            <dt>Message-ID</dt>
            <dd>
              <code>{e.messageId ?? '—'}</code>
            </dd>
          </dl>
          <DeliveryDetails email={e} />
          <EmailPreview id={e.id} />
        </>
      )}
    </Show>
  );
}
