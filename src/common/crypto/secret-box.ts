import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from 'node:crypto';

/**
 * Authenticated encryption of small secrets at rest (DKIM private keys) under
 * a key derived from APP_SECRET.
 *
 * - Key: scrypt(APP_SECRET, salt = "mailwright:" + label). scrypt rather than a
 *   bare HKDF because APP_SECRET may be a human-chosen passphrase, and a stolen
 *   database dump should not be cheap to brute-force. The label separates keys
 *   per purpose, so the DKIM key box and, say, a link-signing key never share
 *   key material. Derivation runs once per (secret, label) per process.
 * - Box layout: version (1 byte, 0x01) | IV (12 bytes) | GCM tag (16 bytes) |
 *   ciphertext. Optional associated data (e.g. the owning row's id) binds a box
 *   to its row: a ciphertext copied to another row no longer opens.
 * - Rotation: boxes are always sealed under the current secret, and open under
 *   it or any previous one (APP_SECRET_PREVIOUS), so a new secret can be put in
 *   place before `secrets rotate` has re-sealed what the old one sealed. The
 *   GCM tag tells the keys apart: a wrong key fails authentication, it never
 *   yields garbage.
 */
export class SecretBox {
  private static readonly VERSION = 0x01;
  private static readonly IV_BYTES = 12;
  private static readonly TAG_BYTES = 16;
  private static readonly HEADER_BYTES = 1 + SecretBox.IV_BYTES + SecretBox.TAG_BYTES;
  private static readonly keyCache = new Map<string, Buffer>();

  private constructor(
    private readonly key: Buffer,
    private readonly previousKeys: readonly Buffer[],
  ) {}

  /**
   * A box for one purpose; `label` is a fixed context string such as
   * "dkim-private-key". `previousSecrets` only open boxes, never seal them.
   */
  static fromSecret(
    secret: string,
    label: string,
    previousSecrets: readonly string[] = [],
  ): SecretBox {
    if ([secret, ...previousSecrets].some((candidate) => candidate.length < 32)) {
      throw new Error('SecretBox: the secret must be at least 32 characters');
    }
    if (!/^[a-z0-9:._-]{1,64}$/.test(label)) throw new Error('SecretBox: invalid label');
    return new SecretBox(
      deriveKey(secret, label, SecretBox.keyCache),
      previousSecrets.map((previous) => deriveKey(previous, label, SecretBox.keyCache)),
    );
  }

  seal(plaintext: Buffer | string, associatedData?: string): Buffer {
    const iv = randomBytes(SecretBox.IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const body = Buffer.concat([
      cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext),
      cipher.final(),
    ]);
    return Buffer.concat([Buffer.from([SecretBox.VERSION]), iv, cipher.getAuthTag(), body]);
  }

  /**
   * Throws when the box was altered, sealed under a secret that is neither the
   * current nor a previous one, under another label, or with other associated data.
   */
  open(box: Buffer, associatedData?: string): Buffer {
    return this.unseal(box, associatedData).plaintext;
  }

  openString(box: Buffer, associatedData?: string): string {
    return this.open(box, associatedData).toString('utf8');
  }

  /**
   * Like open, and says whether the current secret sealed the box: `current`
   * false means only a previous secret opens it, so it is due for re-sealing.
   */
  unseal(box: Buffer, associatedData?: string): { plaintext: Buffer; current: boolean } {
    if (box.length < SecretBox.HEADER_BYTES || box[0] !== SecretBox.VERSION) {
      throw new Error('SecretBox: not a sealed box');
    }
    const current = this.openWith(this.key, box, associatedData);
    if (current) return { plaintext: current, current: true };
    for (const key of this.previousKeys) {
      const plaintext = this.openWith(key, box, associatedData);
      if (plaintext) return { plaintext, current: false };
    }
    // Node's message says nothing useful and must not leak details; one clear error instead.
    throw new Error('SecretBox: the box does not open with the current or a previous key');
  }

  /** The plaintext, or null when the GCM tag does not check out under this key. */
  private openWith(key: Buffer, box: Buffer, associatedData: string | undefined): Buffer | null {
    const iv = box.subarray(1, 1 + SecretBox.IV_BYTES);
    const tag = box.subarray(1 + SecretBox.IV_BYTES, SecretBox.HEADER_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAuthTag(tag);
    if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    try {
      return Buffer.concat([
        decipher.update(box.subarray(SecretBox.HEADER_BYTES)),
        decipher.final(),
      ]);
    } catch {
      return null;
    }
  }
}

/**
 * A 32-byte key for a purpose, derived from the application secret; exported so
 * other helpers (e.g. HMAC signing of links) derive separate keys the same way.
 */
export function deriveKey(secret: string, label: string, cache?: Map<string, Buffer>): Buffer {
  // The cache is keyed by a hash of the secret so the secret itself is not kept as a map key.
  const cacheKey = `${createHash('sha256').update(secret).digest('hex')}:${label}`;
  const cached = cache?.get(cacheKey);
  if (cached) return cached;
  // N = 2^15, r = 8: ~32 MB and tens of milliseconds, paid once per process and label.
  const key = scryptSync(secret, `mailwright:${label}`, 32, {
    N: 1 << 15,
    r: 8,
    p: 1,
    maxmem: 64 * 1024 * 1024,
  });
  cache?.set(cacheKey, key);
  return key;
}
