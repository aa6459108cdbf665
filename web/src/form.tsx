import { useCallback, useState, type InputHTMLAttributes } from 'react';
import type { ApiError } from './api/client';
import { asApiError, ErrorMessage, Field } from './ui';

/** A labelled input holding a string; other input attributes (type, required, …) pass through. */
export function InputField({
  label,
  value,
  onChange,
  ...rest
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
} & Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onChange'>) {
  return (
    <Field label={label}>
      {(id) => <input id={id} value={value} onChange={(e) => onChange(e.target.value)} {...rest} />}
    </Field>
  );
}

/** A datalist of names, for inputs that offer them (`list={id}`) and still take free text. */
export function NameList({ id, names }: { id: string; names: string[] }) {
  return (
    <datalist id={id}>
      {names.map((n) => (
        <option key={n} value={n} />
      ))}
    </datalist>
  );
}

/** The name (required) and description (optional) of a segment or workflow. */
export function NameAndDescription({
  name,
  description,
  onName,
  onDescription,
}: {
  name: string;
  description: string;
  onName: (name: string) => void;
  onDescription: (description: string) => void;
}) {
  return (
    <>
      <InputField label="Name" type="text" required value={name} onChange={onName} />
      <InputField
        label="Description (optional)"
        type="text"
        value={description}
        onChange={onDescription}
      />
    </>
  );
}

/** A choice: its value, or the value and the words shown for it. */
export type Choice<V extends string> = V | readonly [V, string];

/**
 * A labelled select of `choices`; `blank` names an extra first choice whose value is "" (a list
 * filter's "All", a "Choose a segment" prompt).
 */
export function SelectField<V extends string>({
  label,
  value,
  onChange,
  choices,
  blank,
  required,
}: {
  label: string;
  value: V;
  onChange: (value: V) => void;
  choices: readonly Choice<V>[];
  blank?: string;
  required?: boolean;
}) {
  return (
    <Field label={label}>
      {(id) => (
        <select
          id={id}
          value={value}
          required={required}
          onChange={(e) => onChange(e.target.value as V)}
        >
          {blank !== undefined && <option value="">{blank}</option>}
          {choices.map((choice) => {
            const [v, text] = typeof choice === 'string' ? [choice, choice] : choice;
            return (
              <option key={v} value={v}>
                {text}
              </option>
            );
          })}
        </select>
      )}
    </Field>
  );
}

/**
 * A change asked of the API from the page: `run` clears the last error, marks the action busy,
 * and keeps what went wrong in the API's words. It answers whether the work went through.
 */
export function useAction() {
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (work: () => Promise<unknown>): Promise<boolean> => {
    setError(undefined);
    setBusy(true);
    try {
      await work();
      return true;
    } catch (err) {
      setError(asApiError(err));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, setError, busy, run };
}

/**
 * A Delete button that asks first, in the page: `question` with `confirm` and "Keep it"; the
 * API's refusal is shown under it.
 */
export function DeleteAskingFirst({
  question,
  confirm,
  remove,
}: {
  question: string;
  confirm: string;
  remove: () => Promise<unknown>;
}) {
  const [asking, setAsking] = useState(false);
  const action = useAction();
  const yes = async () => {
    if (!(await action.run(remove))) setAsking(false);
  };
  return (
    <div>
      {asking ? (
        <p className="cond-row">
          <span>{question}</span>
          <button type="button" className="danger" onClick={yes}>
            {confirm}
          </button>
          <button type="button" onClick={() => setAsking(false)}>
            Keep it
          </button>
        </p>
      ) : (
        <button type="button" className="danger" onClick={() => setAsking(true)}>
          Delete
        </button>
      )}
      <ErrorMessage error={action.error} />
    </div>
  );
}
