import { UnsubscribeTokens } from './unsubscribe-token';

describe('UnsubscribeTokens', () => {
  const tokens = new UnsubscribeTokens('a-secret-that-is-long-enough-for-the-tests-0001');
  const target = {
    projectId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    contactId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c',
    emailId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d',
  };

  it('round-trips a signed target, with and without an email id', () => {
    expect(tokens.verify(tokens.sign(target))).toEqual(target);
    expect(tokens.verify(tokens.sign({ ...target, emailId: null }))).toEqual({
      ...target,
      emailId: null,
    });
  });

  it('refuses a token whose payload or signature was changed', () => {
    const token = tokens.sign(target);
    for (let i = 0; i < token.length; i++) {
      const swapped = token[i] === 'A' ? 'B' : 'A';
      const altered = token.slice(0, i) + swapped + token.slice(i + 1);
      expect(tokens.verify(altered)).toBeNull();
    }
  });

  it('refuses tokens signed with another secret, truncated tokens and junk', () => {
    const other = new UnsubscribeTokens('another-secret-that-is-long-enough-for-tests-02');
    expect(tokens.verify(other.sign(target))).toBeNull();
    expect(tokens.verify(tokens.sign(target).slice(0, -2))).toBeNull();
    expect(tokens.verify('not-a-token')).toBeNull();
    expect(tokens.verify('')).toBeNull();
  });

  it('after a rotation, verifies tokens of a previous secret and signs with the current one', () => {
    const oldToken = tokens.sign(target);
    const rotated = new UnsubscribeTokens('the-new-secret-that-is-long-enough-for-tests-03', [
      'a-secret-that-is-long-enough-for-the-tests-0001',
    ]);
    expect(rotated.verify(oldToken)).toEqual(target);
    const newToken = rotated.sign(target);
    expect(newToken).not.toBe(oldToken);
    expect(rotated.verify(newToken)).toEqual(target);
    // Signed with the new secret: verifiers that only know the old one refuse it.
    expect(tokens.verify(newToken)).toBeNull();
    // Dropping the old secret from the list ends its links.
    expect(
      new UnsubscribeTokens('the-new-secret-that-is-long-enough-for-tests-03').verify(oldToken),
    ).toBeNull();
  });
});
