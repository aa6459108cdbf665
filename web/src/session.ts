import { api, ApiError, setCsrfToken, unwrap } from './api/client';
import type { SchemaSessionResponse } from './api/schema';

export type Session = SchemaSessionResponse;

/**
 * Whether this browser had a session when it last knew (a flag, never the key or the cookie):
 * only then does a fresh load start the page's calls before GET /session answers. A signed-out
 * visitor's calls would each be a failed authentication, and those are limited per address.
 */
const SIGNED_IN = 'mw:signed-in';

export function probablySignedIn(): boolean {
  try {
    return localStorage.getItem(SIGNED_IN) === '1';
  } catch {
    return false;
  }
}

/**
 * POST/GET/DELETE /session. The secret key goes to the server once and is forgotten: the server
 * sets an HttpOnly cookie that the page cannot read, and the CSRF token stays in memory.
 */
export function remember(session: Session | null): Session | null {
  setCsrfToken(session?.csrfToken ?? null);
  try {
    if (session) localStorage.setItem(SIGNED_IN, '1');
    else localStorage.removeItem(SIGNED_IN);
  } catch {
    // No storage (a locked-down browser): every load then waits for GET /session.
  }
  return session;
}

/** The signed-in project, or null when there is no session (401). */
export async function loadSession(): Promise<Session | null> {
  try {
    return remember((await unwrap(api.GET('/session'))).data);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return remember(null);
    throw error;
  }
}

export async function signIn(key: string): Promise<Session> {
  const started = (await unwrap(api.POST('/session', { body: { key } }))).data;
  return remember(started) as Session;
}

export async function signOut(): Promise<void> {
  try {
    await unwrap(api.DELETE('/session'));
  } finally {
    remember(null);
  }
}
