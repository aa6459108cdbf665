import type { ReactNode } from 'react';
import { api, unwrap } from '../api/client';
import { Badge, PageTitle, Pager, Show, useCursor, useLoad, when, type Page } from '../ui';

/**
 * A read-only list of one kind of thing, paged by cursor. The editors of these pages (campaign
 * composer, webhook deliveries) are still to come; segments and workflows have their own pages.
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

export function WebhooksPage() {
  return (
    <ListPage
      title="Webhooks"
      load={(c) => unwrap(api.GET('/webhooks', query(c))).then((r) => r.data)}
      columns={[
        ['URL', (x) => <code className="clip">{x.url}</code>],
        ['Events', (x) => x.events.join(', ')],
        ['Enabled', (x) => <Badge value={x.enabled ? 'Enabled' : 'Disabled'} />],
        ['Created', (x) => when(x.createdAt)],
      ]}
    />
  );
}
