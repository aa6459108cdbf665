import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { ApiError } from './api/client';

/** What a page shows while it loads: the data, the API's error, and a way to load again. */
export interface Loaded<T> {
  data?: T;
  error?: ApiError;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` on mount and whenever `deps` change; a later answer replaces an earlier one. While a
 * new answer is awaited the previous data stays on screen, marked busy from the very render that
 * asked for it (the key of the deps it answers differs from the current one).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [round, setRound] = useState(0);
  const key = JSON.stringify([...deps, round]);
  const [state, setState] = useState<{ data?: T; error?: ApiError; key?: string }>({});
  useEffect(() => {
    let current = true;
    load().then(
      (data) => current && setState({ data, key }),
      (error: unknown) => current && setState((s) => ({ data: s.data, error: asApiError(error), key })),
    );
    return () => {
      current = false;
    };
  }, [key]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data: state.data, error: state.error, loading: state.key !== key, reload };
}

export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError(error instanceof Error ? error.message : String(error), 0);
}

/** The API's message, in words, where the user looks (announced to screen readers). */
export function ErrorMessage({ error }: { error: ApiError | undefined }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      <p>{error.message}</p>
      {error.fieldErrors.length > 0 && (
        <ul>
          {error.fieldErrors.map((f) => (
            <li key={f.field + f.message}>
              <code>{f.field}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The page's data, a loading note, or its error. */
export function Show<T>({ state, children }: { state: Loaded<T>; children: (data: T) => ReactNode }) {
  if (state.data === undefined) {
    return state.error ? <ErrorMessage error={state.error} /> : <p aria-busy="true">Loading…</p>;
  }
  return (
    <div aria-busy={state.loading}>
      <ErrorMessage error={state.error} />
      {children(state.data)}
    </div>
  );
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  // Focus moves to the new page's heading so keyboard and screen-reader users land on it.
  useEffect(() => ref.current?.focus(), []);
  return (
    <header className="page-title">
      <h1 tabIndex={-1} ref={ref}>
        {children}
      </h1>
      {actions && <div className="actions">{actions}</div>}
    </header>
  );
}

export interface Page<T> {
  items: T[];
  nextCursor?: string | null;
  hasMore: boolean;
  total: number;
  totalEstimated?: boolean;
}

/**
 * A list's total in words: the count, or "about" the planner's estimate rounded to two
 * significant figures when the API says it estimated (large contact and email lists).
 */
export function Total({ page }: { page: Pick<Page<unknown>, 'total' | 'totalEstimated'> }) {
  if (!page.totalEstimated) return <>{page.total.toLocaleString()}</>;
  const scale = 10 ** Math.max(0, Math.floor(Math.log10(page.total)) - 1);
  return <>about {(Math.round(page.total / scale) * scale).toLocaleString()}</>;
}

/** Cursor paging: the cursors of the pages before this one, so Previous goes back exactly. */
export function useCursor(resetKey: string) {
  const [stack, setStack] = useState<(string | undefined)[]>([undefined]);
  const [key, setKey] = useState(resetKey);
  if (key !== resetKey) {
    setKey(resetKey);
    setStack([undefined]);
  }
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    page: stack.length,
    next: (c: string | null | undefined) => c && setStack((s) => [...s, c]),
    previous: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
  };
}

export function Pager({
  page,
  data,
  paging,
  label,
}: {
  page: number;
  data: Page<unknown>;
  paging: ReturnType<typeof useCursor>;
  label: string;
}) {
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <button type="button" onClick={paging.previous} disabled={page <= 1}>
        Previous
      </button>
      <span>
        Page {page} · <Total page={data} /> {label.toLowerCase()}
      </span>
      <button
        type="button"
        onClick={() => paging.next(data.nextCursor)}
        disabled={!data.hasMore || !data.nextCursor}
      >
        Next
      </button>
    </nav>
  );
}

export function Badge({ value }: { value: string }) {
  return <span className={`badge badge-${value.toLowerCase()}`}>{value}</span>;
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // No clipboard permission (plain http, older browsers): select-and-copy fallback.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  return (
    <button type="button" className="small" onClick={copy} aria-label={`Copy ${label}`}>
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}

/** A labelled form control (the label is tied to the input by id). */
export function Field({
  label,
  children,
}: {
  label: string;
  children: (id: string) => ReactNode;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id)}
    </div>
  );
}

export function when(value: string | null | undefined): string {
  return value ? new Date(value).toLocaleString() : '—';
}

export function percent(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? '—' : `${(rate * 100).toFixed(2)} %`;
}

export function Json({ value }: { value: unknown }) {
  return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
}
