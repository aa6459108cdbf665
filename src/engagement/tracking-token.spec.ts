import { createHmac } from 'node:crypto';
import { parse as parseUuid } from 'uuid';
import { MAX_TRACKED_URL_BYTES, TrackingTokens } from './tracking-token';

describe('TrackingTokens', () => {
  const secret = 'a-secret-that-is-long-enough-for-the-tests-0001';
  const tokens = new TrackingTokens(secret);
  const emailId = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d';
  const url = 'https://example.org/a?x=1&y=ü#frag';

  it('round-trips opens and clicks, the URL byte for byte', () => {
    expect(tokens.verifyOpen(tokens.signOpen(emailId))).toBe(emailId);
    expect(tokens.verifyClick(tokens.signClick(emailId, url) as string)).toEqual({ emailId, url });
  });

  it('refuses any altered character, truncation or extension', () => {
    for (const token of [tokens.signOpen(emailId), tokens.signClick(emailId, url) as string]) {
      for (let i = 0; i < token.length; i++) {
        const altered = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
        expect(tokens.verifyOpen(altered)).toBeNull();
        expect(tokens.verifyClick(altered)).toBeNull();
      }
      expect(tokens.verifyClick(token.slice(0, -1))).toBeNull();
      expect(tokens.verifyClick(`${token}A`)).toBeNull();
    }
  });

  it('keeps kinds apart: an open token is no click token and the reverse', () => {
    expect(tokens.verifyClick(tokens.signOpen(emailId))).toBeNull();
    expect(tokens.verifyOpen(tokens.signClick(emailId, url) as string)).toBeNull();
  });

  it('a token naming another URL cannot be made without the secret', () => {
    const forge = (key: string) => {
      const payload = Buffer.concat([
        Buffer.from([1]),
        Buffer.from(parseUuid(emailId)),
        Buffer.from('https://evil.example/'),
      ]);
      const mac = createHmac('sha256', key).update(payload).digest().subarray(0, 16);
      return Buffer.concat([payload, mac]).toString('base64url');
    };
    expect(tokens.verifyClick(forge(secret))).toBeNull(); // the raw secret is not the derived key
    expect(tokens.verifyClick(forge('another-secret-another-secret-another'))).toBeNull();
    const otherApp = new TrackingTokens('another-secret-another-secret-another');
    expect(
      tokens.verifyClick(otherApp.signClick(emailId, 'https://evil.example/') as string),
    ).toBeNull();
  });

  it('verifies tokens of APP_SECRET_PREVIOUS after a rotation', () => {
    const old = new TrackingTokens('the-old-secret-the-old-secret-the-old-secret');
    const rotated = new TrackingTokens(secret, ['the-old-secret-the-old-secret-the-old-secret']);
    expect(rotated.verifyOpen(old.signOpen(emailId))).toBe(emailId);
    expect(rotated.verifyClick(old.signClick(emailId, url) as string)).toEqual({ emailId, url });
    expect(tokens.verifyOpen(old.signOpen(emailId))).toBeNull();
  });

  it('does not track links over the size limit, and refuses non-canonical or odd input', () => {
    expect(
      tokens.signClick(emailId, `https://x.org/${'a'.repeat(MAX_TRACKED_URL_BYTES)}`),
    ).toBeNull();
    expect(tokens.verifyOpen('')).toBeNull();
    expect(tokens.verifyOpen('a.b')).toBeNull();
    expect(tokens.verifyClick('A'.repeat(10_000))).toBeNull();
    const token = tokens.signOpen(emailId);
    expect(tokens.verifyOpen(Buffer.from(token, 'base64url').toString('base64'))).toBe(
      Buffer.from(token, 'base64url').toString('base64') === token ? emailId : null,
    );
  });
});
