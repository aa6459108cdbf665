import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { components } from '../api/schema';
import { useAction } from '../form';
import { Table } from '../list';
import { asApiError, ErrorMessage, Field } from '../ui';

type ContactImport = components['schemas']['ContactImportResponse'];

/** How often a running import's progress is read (GET /contacts/imports/{id}). */
const POLL_MS = 500;

const finished = (job: ContactImport) => job.status === 'COMPLETED' || job.status === 'FAILED';

/**
 * CSV import: the file goes to POST /contacts/import as text/csv (header row with an email
 * column, optional subscribed, other columns into data); a queue worker does the work, and this
 * reads its progress until it ends, then shows the rows the API refused with its reasons.
 */
export function ContactImport({ onFinished }: { onFinished: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [job, setJob] = useState<ContactImport>();
  const upload = useAction();
  const done = useRef(onFinished);
  done.current = onFinished;

  useEffect(() => {
    if (!job || finished(job)) return;
    const timer = setTimeout(async () => {
      try {
        const next = await unwrap(
          api.GET('/contacts/imports/{id}', { params: { path: { id: job.id } } }),
        );
        setJob(next.data);
        if (finished(next.data)) done.current();
      } catch (err) {
        upload.setError(asApiError(err));
      }
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [job]);

  const start = (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    setJob(undefined);
    void upload.run(async () => {
      const text = await file.text();
      const answer = await unwrap(
        api.POST('/contacts/import', {
          body: text as never,
          bodySerializer: (body: unknown) => body as string,
          headers: { 'Content-Type': 'text/csv' },
        }),
      );
      setJob(answer.data);
      if (finished(answer.data)) done.current();
    });
  };

  const running = job !== undefined && !finished(job);
  return (
    <details className="add" open={job !== undefined || undefined}>
      <summary>Import contacts from CSV</summary>
      <p>
        A header row with an <code>email</code> column; optional <code>subscribed</code> (true or
        false); every other column goes into the contact's data. Existing contacts are updated.
      </p>
      {/* Not a flex row: a file input's own width would push past a 360 px screen. */}
      <form onSubmit={start}>
        <Field label="CSV file">
          {(id) => (
            <input
              id={id}
              type="file"
              accept=".csv,text/csv"
              required
              style={{ width: '100%' }}
              onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            />
          )}
        </Field>
        <button
          type="submit"
          disabled={!file || upload.busy || running}
          style={{ marginTop: '0.5rem' }}
        >
          {upload.busy ? 'Uploading…' : 'Import'}
        </button>
      </form>
      <ErrorMessage error={upload.error} />
      {job && <ImportProgress job={job} />}
    </details>
  );
}

function ImportProgress({ job }: { job: ContactImport }) {
  const label = `Import ${job.status.toLowerCase()}: ${job.processed.toLocaleString()} of ${job.total.toLocaleString()} rows`;
  return (
    <section aria-label="Import progress">
      <p role="status" aria-live="polite" data-testid="import-status">
        {label}
        {finished(job) && (
          <>
            {' '}
            · {job.created.toLocaleString()} created, {job.updated.toLocaleString()} updated,{' '}
            {job.failed.toLocaleString()} failed
          </>
        )}
      </p>
      <progress
        max={Math.max(job.total, 1)}
        value={job.status === 'COMPLETED' ? Math.max(job.total, 1) : job.processed}
        aria-label="Rows imported"
      />
      {job.errors.length > 0 && (
        <>
          <h3>Rows with errors</h3>
          {job.failed > job.errors.length && (
            <p className="muted">
              The first {job.errors.length} of {job.failed.toLocaleString()} are shown.
            </p>
          )}
          <Table columns={['Line', 'Email', 'Field', 'Problem']}>
            {job.errors.map((row) => (
              <tr key={`${row.row}-${row.field}`} data-testid="import-error">
                <td>{row.line ?? row.row}</td>
                <td>{row.email ?? '—'}</td>
                <td>
                  <code>{row.field}</code>
                </td>
                <td>{row.message}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  );
}
