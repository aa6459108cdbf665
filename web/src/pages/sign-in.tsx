import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { signIn, type Session } from '../session';
import { asApiError, ErrorMessage, Field } from '../ui';

export function SignInPage({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await signIn(key.trim());
      setKey('');
      onSignedIn(session);
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="sign-in">
      <h1>Sign in to Mailwright</h1>
      <p>
        Use one of your project's secret keys (<code>sk_…</code>). It is exchanged for a session and
        not stored in this browser.
      </p>
      <form onSubmit={submit}>
        <Field label="Secret key">
          {(id) => (
            <input
              id={id}
              name="key"
              type="password"
              autoComplete="off"
              spellCheck={false}
              required
              value={key}
              onChange={(e) => setKey(e.target.value)}
            />
          )}
        </Field>
        <ErrorMessage error={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
