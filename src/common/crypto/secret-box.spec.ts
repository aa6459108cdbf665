import { SecretBox, deriveKey } from './secret-box';

const SECRET = 'unit-test-secret-unit-test-secret-0123456789';
const OTHER_SECRET = 'another-secret-another-secret-another-0123';

describe('SecretBox', () => {
  const box = SecretBox.fromSecret(SECRET, 'dkim-private-key');

  it('opens what it sealed, with the same associated data', () => {
    const sealed = box.seal(
      '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n',
      'row-1',
    );
    expect(box.openString(sealed, 'row-1')).toBe(
      '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n',
    );
  });

  it('never stores the plaintext and uses a fresh IV per seal', () => {
    const a = box.seal('the same secret value');
    const b = box.seal('the same secret value');
    expect(a.equals(b)).toBe(false);
    expect(a.includes(Buffer.from('secret value'))).toBe(false);
    expect(a.length).toBe(1 + 12 + 16 + 'the same secret value'.length);
  });

  it('refuses a box whose ciphertext, tag or IV was altered', () => {
    const sealed = box.seal('payload');
    for (const index of [1, 13, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[index] ^= 0x01;
      expect(() => box.open(tampered)).toThrow('does not open');
    }
  });

  it('refuses a box moved to another row (associated data differs)', () => {
    const sealed = box.seal('payload', 'row-1');
    expect(() => box.open(sealed, 'row-2')).toThrow('does not open');
    expect(() => box.open(sealed)).toThrow('does not open');
  });

  it('refuses a box sealed under another secret or another label', () => {
    const sealed = box.seal('payload');
    expect(() => SecretBox.fromSecret(OTHER_SECRET, 'dkim-private-key').open(sealed)).toThrow(
      'does not open',
    );
    expect(() => SecretBox.fromSecret(SECRET, 'link-signing').open(sealed)).toThrow(
      'does not open',
    );
  });

  it('after a rotation, opens boxes of a previous secret and seals only under the current one', () => {
    const old = box.seal('payload', 'row-1');
    const rotated = SecretBox.fromSecret(OTHER_SECRET, 'dkim-private-key', [SECRET]);
    expect(rotated.openString(old, 'row-1')).toBe('payload');
    expect(rotated.unseal(old, 'row-1').current).toBe(false);

    const fresh = rotated.seal('payload', 'row-1');
    expect(rotated.unseal(fresh, 'row-1')).toEqual({
      plaintext: Buffer.from('payload'),
      current: true,
    });
    // Sealed under the new secret: the old secret alone no longer opens it.
    expect(() => box.open(fresh, 'row-1')).toThrow('does not open');
    // A previous secret does not loosen the other checks.
    expect(() => rotated.open(old, 'row-2')).toThrow('does not open');
    expect(() => SecretBox.fromSecret(OTHER_SECRET, 'dkim-private-key').open(old, 'row-1')).toThrow(
      'does not open',
    );
  });

  it('rejects short secrets and garbage boxes', () => {
    expect(() => SecretBox.fromSecret('too-short', 'x')).toThrow('at least 32');
    expect(() => SecretBox.fromSecret(SECRET, 'x', ['too-short'])).toThrow('at least 32');
    expect(() => box.open(Buffer.from('nope'))).toThrow('not a sealed box');
  });

  it('derives distinct 32-byte keys per label, stable for the same input', () => {
    const k1 = deriveKey(SECRET, 'a');
    expect(k1).toHaveLength(32);
    expect(deriveKey(SECRET, 'a').equals(k1)).toBe(true);
    expect(deriveKey(SECRET, 'b').equals(k1)).toBe(false);
  });
});
