import { useEffect, useState } from 'react';
import { Link, Route, Router, Switch, useRoute } from 'wouter';
import { ApiError } from './api/client';
import { ContactPage, ContactsPage } from './pages/contacts';
import { DomainPage, DomainsPage } from './pages/domains';
import { EmailPage, EmailsPage } from './pages/emails';
import { EventsPage } from './pages/events';
import { CampaignPage, CampaignsPage, EditCampaignPage, NewCampaignPage } from './pages/campaigns';
import { OverviewPage } from './pages/overview';
import { EditSegmentPage, NewSegmentPage, SegmentPage, SegmentsPage } from './pages/segments';
import { SettingsPage } from './pages/settings';
import { SignInPage } from './pages/sign-in';
import { TemplatePage, TemplatesPage } from './pages/templates';
import { WebhookPage, WebhooksPage } from './pages/webhooks';
import {
  EditWorkflowPage,
  ExecutionPage,
  NewWorkflowPage,
  WorkflowPage,
  WorkflowsPage,
} from './pages/workflows';
import { loadSession, probablySignedIn, remember, signOut, type Session } from './session';
import { ErrorMessage, PageTitle } from './ui';

const NAV: [string, string][] = [
  ['/', 'Overview'],
  ['/contacts', 'Contacts'],
  ['/emails', 'Emails'],
  ['/events', 'Events'],
  ['/campaigns', 'Campaigns'],
  ['/templates', 'Templates'],
  ['/segments', 'Segments'],
  ['/workflows', 'Workflows'],
  ['/webhooks', 'Webhooks'],
  ['/domains', 'Domains'],
  ['/settings', 'Settings'],
];

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<ApiError>();
  const [optimistic] = useState(probablySignedIn);

  useEffect(() => {
    loadSession().then(setSession, (e: ApiError) => setError(e));
    // Any API call answered 401 means the session ended (idle, revoked, signed out elsewhere).
    const ended = () => setSession(remember(null));
    window.addEventListener('mw:signed-out', ended);
    return () => window.removeEventListener('mw:signed-out', ended);
  }, []);

  if (error) return <ErrorMessage error={error} />;
  if (session === null)
    return (
      <Router base="/app">
        <SignInPage onSignedIn={setSession} />
      </Router>
    );
  if (session === undefined && !optimistic) return <p aria-busy="true">Loading…</p>;
  // When this browser was signed in, the page is mounted while GET /session is still on its way,
  // so that its own calls run beside it instead of after it (the cookie authenticates them; a 401
  // ends in the sign-in page). It stays hidden until the session is known.
  return (
    <Router base="/app">
      {session === undefined && <p aria-busy="true">Loading…</p>}
      <div hidden={session === undefined}>
        <Layout session={session} onSignOut={() => signOut().finally(() => setSession(null))} />
      </div>
    </Router>
  );
}

function NavLink({ href, label }: { href: string; label: string }) {
  const [exact] = useRoute(href);
  const [nested] = useRoute(`${href}/*`);
  const active = exact || (href !== '/' && nested);
  return (
    <li>
      <Link href={href} aria-current={active ? 'page' : undefined}>
        {label}
      </Link>
    </li>
  );
}

function Layout({ session, onSignOut }: { session: Session | undefined; onSignOut: () => void }) {
  const known = session !== undefined;
  // A page's heading takes focus when the page mounts (PageTitle), which cannot happen while the
  // layout is hidden: it does when the session is known and the layout shows.
  useEffect(() => {
    if (known) document.querySelector<HTMLElement>('main h1')?.focus();
  }, [known]);
  return (
    <div className="layout">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Mailwright</span>
        <span className="project" title={session?.project.id}>
          {session?.project.name}
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav className="side" aria-label="Main">
        <ul>
          {NAV.map(([href, label]) => (
            <NavLink key={href} href={href} label={label} />
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <Switch>
          <Route path="/" component={OverviewPage} />
          <Route path="/contacts" component={ContactsPage} />
          <Route path="/contacts/:id">{(p) => <ContactPage id={p.id} />}</Route>
          <Route path="/emails" component={EmailsPage} />
          <Route path="/emails/:id">{(p) => <EmailPage id={p.id} />}</Route>
          <Route path="/events" component={EventsPage} />
          <Route path="/campaigns" component={CampaignsPage} />
          <Route path="/campaigns/new" component={NewCampaignPage} />
          <Route path="/campaigns/:id/edit">{(p) => <EditCampaignPage id={p.id} />}</Route>
          <Route path="/campaigns/:id">{(p) => <CampaignPage id={p.id} />}</Route>
          <Route path="/templates" component={TemplatesPage} />
          <Route path="/templates/:id">{(p) => <TemplatePage id={p.id} />}</Route>
          <Route path="/segments" component={SegmentsPage} />
          <Route path="/segments/new" component={NewSegmentPage} />
          <Route path="/segments/:id/edit">{(p) => <EditSegmentPage id={p.id} />}</Route>
          <Route path="/segments/:id">{(p) => <SegmentPage id={p.id} />}</Route>
          <Route path="/workflows" component={WorkflowsPage} />
          <Route path="/workflows/new" component={NewWorkflowPage} />
          <Route path="/workflows/:id/edit">{(p) => <EditWorkflowPage id={p.id} />}</Route>
          <Route path="/workflows/:id/executions/:executionId">
            {(p) => <ExecutionPage id={p.id} executionId={p.executionId} />}
          </Route>
          <Route path="/workflows/:id">{(p) => <WorkflowPage id={p.id} />}</Route>
          <Route path="/webhooks" component={WebhooksPage} />
          <Route path="/webhooks/:id">{(p) => <WebhookPage id={p.id} />}</Route>
          <Route path="/domains" component={DomainsPage} />
          <Route path="/domains/:id">{(p) => <DomainPage id={p.id} />}</Route>
          <Route path="/settings" component={SettingsPage} />
          <Route>
            <PageTitle>Not found</PageTitle>
            <p>
              No page here. <Link href="/">Back to the overview</Link>.
            </p>
          </Route>
        </Switch>
      </main>
    </div>
  );
}
