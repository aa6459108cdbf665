import { ApiError, setCsrfToken, unwrap } from './api/client';

export interface Session {
  project: { id: string; name: string };
  csrfToken: string;
  expiresAt: string;
}

/**
 * POST/GET/DELETE /session. The secret key goes to the server once and is forgotten: the
 * server sets an HttpOnly cookie that the page cannot read, and the CSRF token stays in memory.
 */
async function call(method: 'GET' | 'POST' | 'DELETE', body?: unknown): Promise<Session | null> {
  const res = fetch(`${window.location.origin}/session`, {
    method,
    credentials: 'include',
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(method === 'DELETE' && current ? { 'X-CSRF-Token': current.csrfToken } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (response) => {
    const text = await response.text();
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    return response.ok
      ? { data: parsed as { data: Session }, response }
      : { error: parsed, response };
  });
  const envelope = await unwrap(res);
  return envelope?.data ?? null;
}

let current: Session | null = null;

function remember(session: Session | null): Session | null {
  current = session;
  setCsrfToken(session?.csrfToken ?? null);
  return session;
}

/** The signed-in project, or null when there is no session (401). */
export async function loadSession(): Promise<Session | null> {
  try {
    return remember(await call('GET'));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return remember(null);
    throw error;
  }
}

export async function signIn(key: string): Promise<Session> {
  const started = await call('POST', { key });
  // GET /session answers the CSRF token; POST's answer may carry it too.
  return remember(started?.csrfToken ? started : await call('GET')) as Session;
}

export async function signOut(): Promise<void> {
  try {
    await call('DELETE');
  } finally {
    remember(null);
  }
}
