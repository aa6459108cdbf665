import { api, unwrap } from '../api/client';
import { Badge, PageTitle, Show, useLoad, when } from '../ui';

async function loadSettings() {
  const [project, keys] = await Promise.all([
    unwrap(api.GET('/project')),
    unwrap(api.GET('/project/keys', { params: { query: { limit: 100 } } })),
  ]);
  return { project: project.data, keys: keys.data.items };
}

export function SettingsPage() {
  const state = useLoad(loadSettings, []);
  return (
    <>
      <PageTitle>Settings</PageTitle>
      <Show state={state}>
        {({ project, keys }) => (
          <>
            <h2>Project</h2>
            <dl className="facts">
              <dt>Name</dt>
              <dd>{project.name}</dd>
              <dt>ID</dt>
              <dd>
                <code>{project.id}</code>
              </dd>
              <dt>Default sender</dt>
              <dd>
                <code>{project.defaultFrom ? JSON.stringify(project.defaultFrom) : '—'}</code>
              </dd>
              <dt>Created</dt>
              <dd>{when(project.createdAt)}</dd>
            </dl>
            <h2>API keys</h2>
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Type</th>
                    <th scope="col">State</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {keys.map((k) => (
                    <tr key={k.id}>
                      <td>
                        <code>{k.prefix}…</code>
                      </td>
                      <td>{k.type}</td>
                      <td>
                        <Badge value={k.revoked ? 'Revoked' : 'Active'} />
                      </td>
                      <td>{when(k.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </Show>
    </>
  );
}
