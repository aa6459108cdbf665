import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import type { SchemaTemplateResponse, SchemaTemplateType } from '../api/schema';
import { InputField, SelectField, useAction } from '../form';
import { PagedTable, usePagedList } from '../list';
import { asApiError, ErrorMessage, Field, PageTitle, Show, useLoad, when } from '../ui';
import './editor.css';

const TYPES: SchemaTemplateType[] = ['MARKETING', 'TRANSACTIONAL'];

export function TemplatesPage() {
  const [type, setType] = useState<SchemaTemplateType | ''>('');
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/templates', {
          params: { query: { limit: 50, cursor, type: type || undefined } },
        }),
      ).then((r) => r.data),
    [type],
  );
  return (
    <>
      <PageTitle>Templates</PageTitle>
      <NewTemplate />
      <div className="filters">
        <SelectField label="Type" value={type} onChange={setType} choices={TYPES} blank="All" />
      </div>
      <PagedTable
        list={list}
        label="Templates"
        empty="No templates yet."
        columns={['Name', 'Subject', 'Type', 'Updated']}
        row={(t) => (
          <tr key={t.id}>
            <td>
              <Link href={`/templates/${t.id}`}>{t.name}</Link>
            </td>
            <td>{t.subject}</td>
            <td>{t.type}</td>
            <td>{when(t.updatedAt)}</td>
          </tr>
        )}
      />
    </>
  );
}

/** A new template is saved first (name, type, a starting subject and body), then edited with its preview. */
function NewTemplate() {
  const [name, setName] = useState('');
  const [type, setType] = useState<SchemaTemplateType>('MARKETING');
  const create = useAction();
  const [, navigate] = useLocation();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      const created = await unwrap(
        api.POST('/templates', {
          body: {
            name: name.trim(),
            type,
            subject: 'Hello {{ firstName | default: "there" }}',
            body: '<p>Hello {{ firstName | default: "there" }},</p>\n\n<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
          },
        }),
      );
      navigate(`/templates/${created.data.id}`);
    });
  };
  return (
    <details className="add">
      <summary>New template</summary>
      <form className="filters" onSubmit={submit}>
        <InputField label="Template name" value={name} required onChange={setName} />
        <SelectField label="Template type" value={type} onChange={setType} choices={TYPES} />
        <button type="submit" disabled={create.busy}>
          {create.busy ? 'Creating…' : 'Create template'}
        </button>
      </form>
      <ErrorMessage error={create.error} />
    </details>
  );
}

export function TemplatePage({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/templates/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  return <Show state={state}>{(t) => <TemplateEditor key={t.id} template={t} />}</Show>;
}

/** A Liquid error's line, from the parser's message ("…, line:3, col:5"). */
export function liquidLine(message: string): number | undefined {
  const m = /line:(\d+)/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/** Selects line `line` (1-based) of a textarea and scrolls to it. */
export function goToLine(area: HTMLTextAreaElement | null, line: number): void {
  if (!area) return;
  const lines = area.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  area.focus();
  area.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
  const lineHeight = area.scrollHeight / Math.max(lines.length, 1);
  area.scrollTop = Math.max(0, (line - 3) * lineHeight);
}

/** The API's 422 on the Liquid fields, each with its line when the parser gave one. */
export function LiquidErrors({
  error,
  onLine,
}: {
  error: ApiError | undefined;
  onLine: (field: string, line: number) => void;
}) {
  if (!error) return null;
  const liquid = error.fieldErrors.filter((f) => f.field === 'subject' || f.field === 'body');
  if (liquid.length === 0) return <ErrorMessage error={error} />;
  return (
    <div className="error" role="alert">
      <p>The Liquid does not parse:</p>
      <ul>
        {liquid.map((f) => {
          const line = liquidLine(f.message);
          const label = f.field === 'body' ? 'Body' : 'Subject';
          return (
            <li key={f.field + f.message}>
              {label}
              {line !== undefined && <>, line {line}</>}: {f.message}{' '}
              {line !== undefined && f.field === 'body' && (
                <button type="button" className="small" onClick={() => onLine(f.field, line)}>
                  Go to line {line}
                </button>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function TemplateEditor({ template }: { template: SchemaTemplateResponse }) {
  const [draft, setDraft] = useState({
    name: template.name,
    type: template.type,
    subject: template.subject,
    body: template.body,
    from: template.from ?? '',
  });
  const [saved, setSaved] = useState(template);
  const [sample, setSample] = useState('{\n  "firstName": "Ada"\n}');
  const save = useAction();
  const [status, setStatus] = useState('');
  const bodyRef = useRef<HTMLTextAreaElement>(null);
  const [, navigate] = useLocation();
  const preview = useLivePreview(template.id, draft.subject, draft.body, sample);

  const dirty =
    draft.name !== saved.name ||
    draft.type !== saved.type ||
    draft.subject !== saved.subject ||
    draft.body !== saved.body ||
    draft.from !== (saved.from ?? '');

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setStatus('');
    void save.run(async () => {
      const res = await unwrap(
        api.PATCH('/templates/{id}', {
          params: { path: { id: template.id } },
          body: {
            name: draft.name.trim(),
            type: draft.type,
            subject: draft.subject,
            body: draft.body,
            from: draft.from.trim() || null,
          },
        }),
      );
      setSaved(res.data);
      setStatus(`Saved at ${new Date().toLocaleTimeString()}`);
    });
  };

  const remove = async () => {
    if (!window.confirm(`Delete the template “${saved.name}”?`)) return;
    try {
      await unwrap(api.DELETE('/templates/{id}', { params: { path: { id: template.id } } }));
      navigate('/templates');
    } catch (err) {
      save.setError(asApiError(err));
    }
  };

  const set = (key: keyof typeof draft) => (value: string) =>
    setDraft((d) => ({ ...d, [key]: value }));

  return (
    <>
      <PageTitle
        actions={
          <button type="button" className="danger" onClick={remove}>
            Delete
          </button>
        }
      >
        {saved.name}
      </PageTitle>
      <p className="muted">
        <Link href="/templates">All templates</Link> · updated {when(saved.updatedAt)}
      </p>
      <div className="editor">
        <form className="editor-form" onSubmit={submit} aria-label="Template">
          <InputField label="Name" value={draft.name} required onChange={set('name')} />
          <SelectField label="Type" value={draft.type} onChange={set('type')} choices={TYPES} />
          <InputField
            label="Default sender (optional)"
            type="email"
            value={draft.from}
            placeholder="news@yourdomain.com"
            onChange={set('from')}
          />
          <InputField
            label="Subject (Liquid)"
            value={draft.subject}
            required
            onChange={set('subject')}
          />
          <Field label="Body (HTML with Liquid)">
            {(id) => (
              <textarea
                id={id}
                ref={bodyRef}
                className="code"
                rows={16}
                spellCheck={false}
                value={draft.body}
                required
                onChange={(e) => set('body')(e.target.value)}
              />
            )}
          </Field>
          <LiquidErrors error={save.error} onLine={(_, line) => goToLine(bodyRef.current, line)} />
          <div className="actions">
            <button type="submit" disabled={save.busy || !dirty}>
              {save.busy ? 'Saving…' : 'Save'}
            </button>
            <span className="muted" role="status">
              {dirty ? 'Unsaved changes' : status}
            </span>
          </div>
        </form>
        <section className="preview" aria-labelledby="preview-title">
          <h2 id="preview-title">Preview</h2>
          <Field label="Sample data (JSON)">
            {(id) => (
              <textarea
                id={id}
                className="code"
                rows={4}
                spellCheck={false}
                value={sample}
                onChange={(e) => setSample(e.target.value)}
              />
            )}
          </Field>
          <PreviewPane preview={preview} onLine={(_, line) => goToLine(bodyRef.current, line)} />
        </section>
      </div>
    </>
  );
}

interface PreviewState {
  rendered?: { subject: string; html: string; text: string };
  error?: ApiError;
  busy: boolean;
}

/**
 * Renders what is being typed through the API (POST /templates/{id}/preview with the unsaved
 * subject and body), 400 ms after the last keystroke; an answer to an older draft is dropped.
 * The first render, of the template as loaded, goes at once: there is no typing to wait out.
 */
function useLivePreview(id: string, subject: string, body: string, sample: string): PreviewState {
  const [state, setState] = useState<PreviewState>({ busy: true });
  const rendered = useRef(false);
  useEffect(() => {
    let data: Record<string, unknown> = {};
    try {
      const parsed: unknown = sample.trim() ? JSON.parse(sample) : {};
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error();
      data = parsed as Record<string, unknown>;
    } catch {
      setState((s) => ({
        ...s,
        busy: false,
        error: asApiError(
          new Error('Sample data must be a JSON object, e.g. {"firstName": "Ada"}'),
        ),
      }));
      return;
    }
    let current = true;
    setState((s) => ({ ...s, busy: true }));
    const delay = rendered.current ? 400 : 0;
    rendered.current = true;
    const timer = setTimeout(() => {
      unwrap(
        api.POST('/templates/{id}/preview', {
          params: { path: { id } },
          body: { subject, body, data },
        }),
      ).then(
        (r) => current && setState({ rendered: r.data, busy: false }),
        (err: unknown) =>
          current &&
          setState((s) => ({ rendered: s.rendered, error: asApiError(err), busy: false })),
      );
    }, delay);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [id, subject, body, sample]);
  return state;
}

export function PreviewPane({
  preview,
  onLine,
}: {
  preview: PreviewState;
  onLine: (field: string, line: number) => void;
}) {
  return (
    <div aria-busy={preview.busy}>
      <LiquidErrors error={preview.error} onLine={onLine} />
      {preview.rendered ? (
        <div className={preview.error ? 'stale' : undefined}>
          <p>
            <span className="label">Subject</span> <strong>{preview.rendered.subject}</strong>
            {preview.error && <span className="muted"> (last good render)</span>}
          </p>
          {/* No scripts, no same-origin access: the rendered HTML is the user's, shown as mail would be. */}
          <iframe
            className="preview-frame"
            title="Rendered email"
            sandbox=""
            srcDoc={preview.rendered.html}
          />
        </div>
      ) : (
        !preview.error && <p>Rendering…</p>
      )}
    </div>
  );
}
