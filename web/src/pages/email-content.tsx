import { useState } from 'react';
import { api, unwrap } from '../api/client';
import type { SchemaEmailResponse } from '../api/schema';
import { Show, useLoad, when } from '../ui';
import './edit-forms.css';

/**
 * The message itself (GET /emails/{id}/content) in an iframe with an empty sandbox: the mail's
 * HTML runs no script, submits no form and cannot reach the dashboard's origin or session.
 */
export function EmailPreview({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/emails/{id}/content', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  const [view, setView] = useState<'html' | 'text'>('html');
  return (
    <section aria-labelledby="email-preview-title">
      <h2 id="email-preview-title">Message</h2>
      <Show state={state}>
        {(content) => (
          <>
            <p>
              Subject: <strong>{content.subject}</strong>
            </p>
            <p className="muted">
              {content.origin === 'STORED'
                ? 'The rendered message stored when it was accepted: what was sent, before the open pixel and tracked links were added.'
                : 'Campaign mail is rendered at delivery and not kept: this is its content rendered again now for the contact as it is now (its unsubscribe link is a preview).'}
            </p>
            <div className="tabs" role="group" aria-label="Message part">
              <button type="button" aria-pressed={view === 'html'} onClick={() => setView('html')}>
                HTML
              </button>
              <button type="button" aria-pressed={view === 'text'} onClick={() => setView('text')}>
                Text
              </button>
            </div>
            {view === 'html' ? (
              <iframe
                className="email-preview"
                title="Rendered email"
                sandbox=""
                srcDoc={content.html}
              />
            ) : (
              <pre className="json">{content.text}</pre>
            )}
          </>
        )}
      </Show>
    </section>
  );
}

/** Delivery attempts and, when there was one, the bounce as the policy recorded it. */
export function DeliveryDetails({ email }: { email: SchemaEmailResponse }) {
  return (
    <>
      <h2>Delivery</h2>
      <dl className="facts">
        <dt>Attempts</dt>
        <dd>{email.attempts}</dd>
        <dt>Last error</dt>
        <dd>{email.error ?? '—'}</dd>
        <dt>Return path</dt>
        <dd>
          <code>{email.returnPath ?? '—'}</code>
        </dd>
        <dt>DKIM signed</dt>
        <dd>{email.dkimSigned === null ? '—' : email.dkimSigned ? 'Yes' : 'No'}</dd>
        <dt>Bounced</dt>
        <dd>{when(email.bouncedAt)}</dd>
        <dt>Complained</dt>
        <dd>{when(email.complainedAt)}</dd>
      </dl>
      {email.bounce && (
        <>
          <h2>Bounce</h2>
          <dl className="facts">
            <dt>Type</dt>
            <dd>{email.bounce.type}</dd>
            <dt>Status</dt>
            <dd>
              <code>{email.bounce.status ?? '—'}</code>
            </dd>
            <dt>Diagnostic</dt>
            <dd>{email.bounce.diagnostic ?? '—'}</dd>
            <dt>Reported by</dt>
            <dd>{email.bounce.source}</dd>
          </dl>
        </>
      )}
    </>
  );
}
