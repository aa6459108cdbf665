import { UnsubscribeTokens } from '../sending/unsubscribe-token';
import { CONFIRMATION_TTL_MS, ConfirmationTokens } from './confirmation-token';

describe('ConfirmationTokens', () => {
  const secret = 'a-secret-that-is-long-enough-for-the-tests-0001';
  const tokens = new ConfirmationTokens(secret);
  const target = {
    projectId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    contactId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c',
    issuedAt: new Date('2026-01-01T10:00:00.123Z'),
  };

  it('round-trips the contact and the issue time', () => {
    const token = tokens.sign(target);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(tokens.verify(token, new Date('2026-01-02T00:00:00Z'))).toEqual(target);
  });

  it('expires 30 days after issue', () => {
    const token = tokens.sign(target);
    const last = new Date(target.issuedAt.getTime() + CONFIRMATION_TTL_MS);
    expect(tokens.verify(token, last)).toEqual(target);
    expect(tokens.verify(token, new Date(last.getTime() + 1))).toBeNull();
  });

  it('refuses altered tokens, other secrets and other kinds of token', () => {
    const now = new Date('2026-01-02T00:00:00Z');
    const token = tokens.sign(target);
    for (let i = 0; i < token.length; i++) {
      const altered = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      expect(tokens.verify(altered, now)).toBeNull();
    }
    expect(
      new ConfirmationTokens('another-secret-that-is-long-enough-for-tests-02').verify(token, now),
    ).toBeNull();
    // Same secret, same-looking body size class: an unsubscribe token is not a confirmation.
    const unsubscribe = new UnsubscribeTokens(secret).sign({
      projectId: target.projectId,
      contactId: target.contactId,
      emailId: null,
    });
    expect(tokens.verify(unsubscribe, now)).toBeNull();
    expect(tokens.verify('', now)).toBeNull();
  });
});
