import { ReturnPathTokens, UNSUBSCRIBE_KIND } from './return-path';

describe('ReturnPathTokens', () => {
  const tokens = new ReturnPathTokens('a-secret-that-is-long-enough-for-the-tests-0001');
  const emailId = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

  it('names the email in lower-case [a-z0-9], at most 60 characters', () => {
    const token = tokens.token(emailId);
    expect(token).toMatch(/^[a-z0-9]{1,60}$/);
    expect(tokens.verify(token)).toBe(emailId);
    expect(tokens.address(emailId, 'bounces.example.com')).toBe(`b-${token}@bounces.example.com`);
  });

  it('verifies an address whatever its domain and case', () => {
    const address = tokens.address(emailId, 'bounces.example.com');
    expect(tokens.verifyAddress(address)).toBe(emailId);
    expect(
      tokens.verifyAddress(address.toUpperCase().replace('@BOUNCES.EXAMPLE.COM', '@elsewhere.org')),
    ).toBe(emailId);
  });

  it('refuses forged, altered and malformed tokens', () => {
    const token = tokens.token(emailId);
    const flipped = token.slice(0, -1) + (token.endsWith('0') ? '1' : '0');
    expect(tokens.verify(flipped)).toBeNull();
    const otherId =
      tokens.token('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c').slice(0, 33) + token.slice(33);
    expect(tokens.verify(otherId)).toBeNull();
    expect(tokens.verify(token + '0')).toBeNull();
    expect(tokens.verify('')).toBeNull();
    expect(tokens.verifyAddress(`u-${token}@x.org`)).toBeNull();
    expect(
      new ReturnPathTokens('another-secret-that-is-long-enough-for-tests-02').verify(token),
    ).toBeNull();
  });

  it('keeps unsubscribe addresses and return paths apart', () => {
    const secret = 'a-secret-that-is-long-enough-for-the-tests-0001';
    const unsubscribe = new ReturnPathTokens(secret, [], UNSUBSCRIBE_KIND);
    const address = unsubscribe.address(emailId, 'bounces.example.com');
    expect(address).toMatch(/^u-[a-z0-9]{53}@bounces\.example\.com$/);
    expect(unsubscribe.verifyAddress(address)).toBe(emailId);
    // Neither passes as the other, with its own prefix or with the other's.
    expect(tokens.verifyAddress(address)).toBeNull();
    expect(tokens.verifyAddress(address.replace(/^u-/, 'b-'))).toBeNull();
    expect(unsubscribe.verifyAddress(tokens.address(emailId, 'x.org'))).toBeNull();
    expect(
      unsubscribe.verifyAddress(tokens.address(emailId, 'x.org').replace(/^b-/, 'u-')),
    ).toBeNull();
  });

  it('accepts tokens of a previous secret after rotation', () => {
    const rotated = new ReturnPathTokens('the-new-secret-that-is-long-enough-for-tests-03', [
      'a-secret-that-is-long-enough-for-the-tests-0001',
    ]);
    expect(rotated.verify(tokens.token(emailId))).toBe(emailId);
  });
});
