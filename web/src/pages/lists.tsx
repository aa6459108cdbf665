import type { ReactNode } from 'react';
import { api, unwrap } from '../api/client';
import { Badge, PageTitle, Pager, Show, useCursor, useLoad, when, type Page } from '../ui';

/**
 * A read-only list of one kind of thing, paged by cursor. The editors of these pages (campaign
 * composer, segment builder, workflow steps, webhook deliveries) are still to come.
 */
function ListPage<T extends { id: string }>({
  title,
  load,
  columns,
}: {
  title: string;
  load: (cursor: string | undefined) => Promise<Page<T>>;
  columns: [string, (item: T) => ReactNode][];
}) {
  const paging = useCursor('');
  const state = useLoad(() => load(paging.cursor), [paging.cursor]);
  return (
    <>
      <PageTitle>{title}</PageTitle>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No {title.toLowerCase()} yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      {columns.map(([label]) => (
                        <th scope="col" key={label}>
                          {label}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((item) => (
                      <tr key={item.id}>
                        {columns.map(([label, cell]) => (
                          <td key={label}>{cell(item)}</td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label={title} />
          </>
        )}
      </Show>
    </>
  );
}

const query = (cursor: string | undefined) => ({ params: { query: { limit: 50, cursor } } });

export function CampaignsPage() {
  return (
    <ListPage
      title="Campaigns"
      load={(c) => unwrap(api.GET('/campaigns', query(c))).then((r) => r.data)}
      columns={[
        ['Name', (x) => x.name],
        ['Subject', (x) => x.subject],
        ['Status', (x) => <Badge value={x.status} />],
        ['Recipients', (x) => x.recipientCount?.toLocaleString() ?? '—'],
        ['Created', (x) => when(x.createdAt)],
      ]}
    />
  );
}

export function TemplatesPage() {
  return (
    <ListPage
      title="Templates"
      load={(c) => unwrap(api.GET('/templates', query(c))).then((r) => r.data)}
      columns={[
        ['Name', (x) => x.name],
        ['Subject', (x) => x.subject],
        ['Type', (x) => x.type],
        ['Updated', (x) => when(x.updatedAt)],
      ]}
    />
  );
}

export function SegmentsPage() {
  return (
    <ListPage
      title="Segments"
      load={(c) => unwrap(api.GET('/segments', query(c))).then((r) => r.data)}
      columns={[
        ['Name', (x) => x.name],
        ['Members', (x) => x.memberCount?.toLocaleString() ?? '—'],
        ['Updated', (x) => when(x.updatedAt)],
      ]}
    />
  );
}

export function WorkflowsPage() {
  return (
    <ListPage
      title="Workflows"
      load={(c) => unwrap(api.GET('/workflows', query(c))).then((r) => r.data)}
      columns={[
        ['Name', (x) => x.name],
        ['Trigger', (x) => x.trigger.type],
        ['Enabled', (x) => <Badge value={x.enabled ? 'Enabled' : 'Disabled'} />],
        ['Steps', (x) => x.steps.length],
        ['Updated', (x) => when(x.updatedAt)],
      ]}
    />
  );
}
