import { Link } from 'wouter';
import { api, unwrap } from '../api/client';
import { Badge, PageTitle, percent, Show, useLoad, when } from '../ui';

/** Four API calls: sender health, contacts and emails totals, recent events. */
async function loadOverview() {
  const [health, contacts, emails, events] = await Promise.all([
    unwrap(api.GET('/project/health')),
    unwrap(api.GET('/contacts', { params: { query: { limit: 1 } } })),
    unwrap(api.GET('/emails', { params: { query: { limit: 1 } } })),
    unwrap(api.GET('/events', { params: { query: { limit: 10 } } })),
  ]);
  return { health: health.data, contacts: contacts.data, emails: emails.data, events: events.data };
}

export function OverviewPage() {
  const state = useLoad(loadOverview, []);
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <Show state={state}>
        {({ health, contacts, emails, events }) => (
          <>
            <section aria-label="Key figures" className="cards">
              <div className="card">
                <h3>Sender health</h3>
                <p className="big">
                  <Badge value={health.status} />
                </p>
                {health.reason && <p>{health.reason}</p>}
                <p className="muted">Last {health.windowDays} days</p>
              </div>
              <div className="card">
                <h3>Sent</h3>
                <p className="big">{health.sent.toLocaleString()}</p>
                <p className="muted">Last {health.windowDays} days</p>
              </div>
              <div className="card">
                <h3>Bounce rate</h3>
                <p className="big">{percent(health.bounceRate)}</p>
                <p className="muted">{health.bounced.toLocaleString()} bounced</p>
              </div>
              <div className="card">
                <h3>Complaint rate</h3>
                <p className="big">{percent(health.complaintRate)}</p>
                <p className="muted">{health.complained.toLocaleString()} complaints</p>
              </div>
              <div className="card">
                <h3>Contacts</h3>
                <p className="big">
                  <Link href="/contacts">{contacts.total.toLocaleString()}</Link>
                </p>
              </div>
              <div className="card">
                <h3>Emails</h3>
                <p className="big">
                  <Link href="/emails">{emails.total.toLocaleString()}</Link>
                </p>
              </div>
            </section>
            <section aria-labelledby="activity-title">
              <h2 id="activity-title">Recent activity</h2>
              {events.items.length === 0 ? (
                <p>No events yet.</p>
              ) : (
                <div className="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Event</th>
                        <th scope="col">Contact</th>
                        <th scope="col">When</th>
                      </tr>
                    </thead>
                    <tbody>
                      {events.items.map((e) => (
                        <tr key={e.id}>
                          <td>{e.name}</td>
                          <td>
                            {e.contactId ? (
                              <Link href={`/contacts/${e.contactId}`}>Contact</Link>
                            ) : (
                              '—'
                            )}
                          </td>
                          <td>{when(e.createdAt)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </section>
          </>
        )}
      </Show>
    </>
  );
}
