import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The dashboard's session cookie: an opaque random id; the server keeps only its SHA-256. */
export const SESSION_COOKIE = 'mw_session';

/** Idle sessions end after this long without a request (sliding expiry). */
export const SESSION_IDLE_SECONDS = 12 * 3600;

export interface SessionCookieOptions {
  /** Set `Secure` (PUBLIC_URL is https). */
  secure: boolean;
}

/** A new session id: 256 random bits, base64url (43 characters). */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

export function isWellFormedSessionId(value: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(value);
}

export function hashSessionId(sessionId: string): Buffer {
  return createHash('sha256').update(`mailwright-session.${sessionId}`, 'utf8').digest();
}

/**
 * The CSRF token of a session, derived from its id rather than stored: only a page that can read
 * GET /session (same origin, with the HttpOnly cookie) learns it, and the stored hash does not give
 * it away (another prefix).
 */
export function csrfTokenOf(sessionId: string): string {
  return createHash('sha256').update(`mailwright-csrf.${sessionId}`, 'utf8').digest('base64url');
}

export function csrfTokenMatches(sent: string | undefined, sessionId: string): boolean {
  if (typeof sent !== 'string') return false;
  const expected = Buffer.from(csrfTokenOf(sessionId));
  const actual = Buffer.from(sent);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** The session cookie's value from a Cookie header, if it has a well-formed one. */
export function readSessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator < 0 || part.slice(0, separator).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(separator + 1).trim();
    return isWellFormedSessionId(value) ? value : '';
  }
  return undefined;
}

/**
 * Set-Cookie for a session: no Max-Age (a browser session cookie), since the server decides
 * expiry and slides it; SameSite=Strict keeps other sites' requests from carrying it.
 */
export function sessionCookie(sessionId: string, options: SessionCookieOptions): string {
  return [
    `${SESSION_COOKIE}=${sessionId}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

/** Set-Cookie that removes the session cookie from the browser. */
export function clearedSessionCookie(options: SessionCookieOptions): string {
  return [
    `${SESSION_COOKIE}=`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    'Max-Age=0',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}
