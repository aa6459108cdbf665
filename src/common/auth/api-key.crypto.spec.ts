import {
  ApiKeyType,
  generateApiKey,
  hashApiKey,
  hashesEqual,
  isWellFormedKey,
  keyTypeOf,
} from './api-key.crypto';

describe('API key crypto', () => {
  it('generates prefixed keys with at least 128 random bits', () => {
    const secret = generateApiKey(ApiKeyType.SECRET);
    const publicKey = generateApiKey(ApiKeyType.PUBLIC);
    expect(secret).toMatch(/^sk_[A-Za-z0-9_-]{32}$/);
    expect(publicKey).toMatch(/^pk_[A-Za-z0-9_-]{32}$/);
    expect(Buffer.from(secret.slice(3), 'base64url').length * 8).toBeGreaterThanOrEqual(128);
    expect(generateApiKey(ApiKeyType.SECRET)).not.toBe(secret);
  });

  it('hashes deterministically and compares hashes', () => {
    const key = generateApiKey(ApiKeyType.SECRET);
    expect(hashesEqual(hashApiKey(key), hashApiKey(key))).toBe(true);
    expect(hashesEqual(hashApiKey(key), hashApiKey(key + 'x'))).toBe(false);
    expect(hashApiKey(key).toString('hex')).not.toContain(key);
  });

  it('recognises key types and refuses malformed keys', () => {
    expect(keyTypeOf('sk_abc')).toBe(ApiKeyType.SECRET);
    expect(keyTypeOf('pk_abc')).toBe(ApiKeyType.PUBLIC);
    expect(keyTypeOf('xx_abc')).toBeNull();
    expect(isWellFormedKey(generateApiKey(ApiKeyType.PUBLIC))).toBe(true);
    expect(isWellFormedKey('sk_short')).toBe(false);
    expect(isWellFormedKey('sk_' + 'a'.repeat(20) + ' ')).toBe(false);
  });
});
