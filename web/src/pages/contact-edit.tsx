import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { SchemaContactResponse } from '../api/schema';
import { useAction } from '../form';
import { ErrorMessage } from '../ui';
import './editor.css';
import './edit-forms.css';

interface DataRow {
  /** Stable across edits of the name, so React keeps focus in the right input. */
  key: number;
  name: string;
  value: string;
  /** The key this row showed when the form was filled; absent for a row added here. */
  origin?: string;
}

/** Strings are shown as they are; anything else as JSON, which is how it is read back. */
function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A typed value reads as JSON when it parses (42, true, null, {"a":1}, "quoted"), else as text:
 * one field per key keeps the form simple and still lets numbers and booleans through, which
 * segment conditions compare by type.
 */
function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function rowsOf(data: Record<string, unknown>, nextKey: () => number): DataRow[] {
  return Object.entries(data).map(([name, value]) => ({
    key: nextKey(),
    name,
    value: shown(value),
    origin: name,
  }));
}

/**
 * PATCH /contacts/{id} from a form: the subscription and the data fields (keys removed in the form
 * are sent as null, which the API removes). The address is not editable: the contract's PATCH takes
 * `subscribed` and `data` only.
 */
export function ContactEditor({
  contact,
  onSaved,
}: {
  contact: SchemaContactResponse;
  onSaved: () => void;
}) {
  const counter = useRef(0);
  const nextKey = () => counter.current++;
  const [subscribed, setSubscribed] = useState(contact.subscribed);
  const [rows, setRows] = useState<DataRow[]>(() => rowsOf(contact.data, nextKey));
  // The contact changed (saved here, or by the page's own buttons): the form starts from it again,
  // so a later save never sends back a stale subscription.
  useEffect(() => {
    setSubscribed(contact.subscribed);
    setRows(rowsOf(contact.data, nextKey));
  }, [contact.updatedAt]);
  const save = useAction();
  const [saved, setSaved] = useState(false);
  const hintId = useId();

  const update = (key: number, change: Partial<DataRow>) =>
    setRows((all) => all.map((r) => (r.key === key ? { ...r, ...change } : r)));

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    // Only what was edited is sent: a field left alone keeps its type (the string "12345" is not
    // read back as a number) and a value changed elsewhere since the page loaded is not overwritten.
    const data: Record<string, unknown> = {};
    const kept = new Set<string>();
    for (const row of rows) {
      const name = row.name.trim();
      const untouched = row.origin !== undefined && row.value === shown(contact.data[row.origin]);
      if (row.origin !== undefined && name === row.origin) {
        kept.add(name);
        if (!untouched) data[name] = parsed(row.value);
      } else if (name) {
        data[name] = untouched ? contact.data[row.origin as string] : parsed(row.value);
      }
    }
    for (const key of Object.keys(contact.data)) {
      if (!kept.has(key) && !(key in data)) data[key] = null;
    }
    const body: { subscribed?: boolean; data: Record<string, unknown> } = { data };
    if (subscribed !== contact.subscribed) body.subscribed = subscribed;
    void save.run(async () => {
      await unwrap(api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body }));
      setSaved(true);
      onSaved();
    });
  };

  return (
    <form
      onSubmit={submit}
      className="editor-form contact-edit"
      aria-labelledby={`${hintId}-title`}
    >
      <h2 id={`${hintId}-title`}>Edit contact</h2>
      <ErrorMessage error={save.error} />
      <p className="muted">The address stays as it is; for another address, add a new contact.</p>
      <div className="field checkbox">
        <label>
          <input
            type="checkbox"
            checked={subscribed}
            onChange={(e) => setSubscribed(e.target.checked)}
          />{' '}
          Subscribed
        </label>
      </div>
      <fieldset>
        <legend>Data fields</legend>
        <p className="muted" id={hintId}>
          Values that read as JSON (42, true, {'{"a":1}'}) are stored as such, others as text.
        </p>
        {rows.length === 0 && <p>No data fields.</p>}
        <ul className="plain data-rows">
          {rows.map((row, i) => (
            <li key={row.key} className="data-row">
              <input
                aria-label={`Field ${i + 1} name`}
                value={row.name}
                onChange={(e) => update(row.key, { name: e.target.value })}
              />
              <input
                aria-label={`Field ${i + 1} value`}
                aria-describedby={hintId}
                value={row.value}
                onChange={(e) => update(row.key, { value: e.target.value })}
              />
              <button
                type="button"
                className="small"
                aria-label={`Remove field ${row.name || i + 1}`}
                onClick={() => setRows((all) => all.filter((r) => r.key !== row.key))}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
        <button
          type="button"
          onClick={() => {
            const key = nextKey();
            setRows((all) => [...all, { key, name: '', value: '' }]);
          }}
        >
          Add field
        </button>
      </fieldset>
      <div className="actions">
        <button type="submit" disabled={save.busy}>
          Save changes
        </button>
        {saved && <span role="status">Saved.</span>}
      </div>
    </form>
  );
}

/**
 * Suppress or lift a suppression through the public suppressions API (POST /suppressions by
 * address, DELETE /suppressions/{contactId}); lifting leaves the contact unsubscribed, as the
 * API says, so the page reloads the contact to show that.
 */
export function SuppressionControl({
  contact,
  onChanged,
}: {
  contact: SchemaContactResponse;
  onChanged: () => void;
}) {
  const action = useAction();
  const run = (call: () => Promise<unknown>) =>
    action.run(async () => {
      await call();
      onChanged();
    });
  return (
    <section aria-labelledby="suppression-title">
      <h2 id="suppression-title">Suppression</h2>
      <ErrorMessage error={action.error} />
      {contact.suppressed ? (
        <>
          <p>Suppressed: no email is sent to this address.</p>
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              run(() =>
                unwrap(
                  api.DELETE('/suppressions/{contactId}', {
                    params: { path: { contactId: contact.id } },
                  }),
                ),
              )
            }
          >
            Lift suppression
          </button>
        </>
      ) : (
        <>
          <p>Not suppressed.</p>
          <button
            type="button"
            className="danger"
            disabled={action.busy}
            onClick={() =>
              window.confirm(`Suppress ${contact.email}? No email will be sent to it.`) &&
              run(() => unwrap(api.POST('/suppressions', { body: { email: contact.email } })))
            }
          >
            Suppress
          </button>
        </>
      )}
    </section>
  );
}
