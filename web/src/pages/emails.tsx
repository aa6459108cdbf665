import { useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import type { SchemaEmailStatus } from '../api/schema';
import { SelectField } from '../form';
import { PagedTable, usePagedList } from '../list';
import { Badge, PageTitle, Show, useLoad, when } from '../ui';
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
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/emails', {
          params: { query: { limit: 50, cursor, status: status || undefined } },
        }),
      ).then((r) => r.data),
    [status],
  );
  return (
    <>
      <PageTitle>Emails</PageTitle>
      <div className="filters">
        <SelectField
          label="Status"
          value={status}
          onChange={setStatus}
          choices={STATUSES}
          blank="All"
        />
      </div>
      <PagedTable
        list={list}
        label="Emails"
        empty="No emails match."
        columns={['To', 'Subject', 'Status', 'Queued']}
        row={(e) => (
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
        )}
      />
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
            <dd>{e.contactId ? <Link href={`/contacts/${e.contactId}`}>{e.to}</Link> : e.to}</dd>
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
