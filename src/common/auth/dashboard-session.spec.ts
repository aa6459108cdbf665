import {
  clearedSessionCookie,
  csrfTokenMatches,
  csrfTokenOf,
  hashSessionId,
  newSessionId,
  readSessionCookie,
  sessionCookie,
} from './dashboard-session';

describe('dashboard session cookie', () => {
  it('ids are 256 random bits in base64url, never repeated', () => {
    const ids = new Set(Array.from({ length: 100 }, () => newSessionId()));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('reads the session cookie among others; a malformed value is an empty (invalid) session', () => {
    const id = newSessionId();
    expect(readSessionCookie(`theme=dark; mw_session=${id}; mw_admin=x`)).toBe(id);
    expect(readSessionCookie(`mw_session=${id}`)).toBe(id);
    expect(readSessionCookie('mw_session=short')).toBe('');
    expect(readSessionCookie('mw_sessionx=abc; other=1')).toBeUndefined();
    expect(readSessionCookie(undefined)).toBeUndefined();
  });

  it('Set-Cookie has exactly the flags, Secure only under https', () => {
    expect(sessionCookie('abc', { secure: false })).toBe(
      'mw_session=abc; Path=/; HttpOnly; SameSite=Strict',
    );
    expect(sessionCookie('abc', { secure: true })).toBe(
      'mw_session=abc; Path=/; HttpOnly; SameSite=Strict; Secure',
    );
    expect(clearedSessionCookie({ secure: false })).toBe(
      'mw_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
    );
  });

  it('the CSRF token belongs to one session and is not its stored hash', () => {
    const a = newSessionId();
    const b = newSessionId();
    expect(csrfTokenMatches(csrfTokenOf(a), a)).toBe(true);
    expect(csrfTokenMatches(csrfTokenOf(b), a)).toBe(false);
    expect(csrfTokenMatches(undefined, a)).toBe(false);
    expect(csrfTokenMatches('', a)).toBe(false);
    expect(csrfTokenOf(a)).not.toBe(hashSessionId(a).toString('base64url'));
    expect(csrfTokenOf(a)).not.toContain(a);
  });
});
