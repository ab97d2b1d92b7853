import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Seals secrets that the service must read back (a Slack bot token and signing secret, a webhook
 * signing secret) with AES-256-GCM under `SECRETS_ENCRYPTION_KEY`. Each value gets a fresh 96-bit
 * IV, and the `context` it belongs to (organization, row, field) is authenticated with it, so a
 * sealed value copied to another row or field no longer opens. The sealed text names its key by a
 * short digest: a value sealed under one of `SECRETS_ENCRYPTION_KEYS_OLD` opens with that key
 * (rotation, see docs/operations.md), and one sealed under a key the box does not hold is refused
 * by name rather than as garbage.
 */
export class SecretBox {
  private readonly current: { id: string; key: Buffer };
  private readonly keys = new Map<string, Buffer>();

  constructor(key: Buffer, oldKeys: readonly Buffer[] = []) {
    for (const each of [key, ...oldKeys]) {
      if (each.length !== 32) throw new Error('a secret box key is 32 bytes');
      this.keys.set(keyIdOf(each), each);
    }
    this.current = { id: keyIdOf(key), key };
  }

  static fromBase64(key: string, oldKeys: readonly string[] = []): SecretBox {
    return new SecretBox(
      Buffer.from(key, 'base64'),
      oldKeys.map((old) => Buffer.from(old, 'base64')),
    );
  }

  /** Whether a stored value is sealed at all: a value stored before its key was set is not. */
  static isSealed(stored: string): boolean {
    return stored.startsWith(`${VERSION}.`);
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv).setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, this.current.id, Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')].join('.');
  }

  open(sealed: string, context: string): string {
    const [version, keyId, body] = sealed.split('.');
    if (version !== VERSION || !keyId || !body) throw new Error('not a sealed secret');
    const key = this.keys.get(keyId);
    if (!key) {
      throw new Error(
        `secret sealed under key ${keyId}, which is neither SECRETS_ENCRYPTION_KEY (${this.current.id}) nor one of SECRETS_ENCRYPTION_KEYS_OLD`,
      );
    }
    const bytes = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
      .setAAD(Buffer.from(context, 'utf8'))
      .setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }

  /** Whether a stored value is sealed under the current key, so that resealing leaves it as it is. */
  isCurrent(stored: string): boolean {
    return SecretBox.isSealed(stored) && stored.split('.')[1] === this.current.id;
  }
}

/** The box of the configured keys, or null when SECRETS_ENCRYPTION_KEY is not set. */
export function secretBoxOf(config: {
  SECRETS_ENCRYPTION_KEY?: string | undefined;
  SECRETS_ENCRYPTION_KEYS_OLD: readonly string[];
}): SecretBox | null {
  return config.SECRETS_ENCRYPTION_KEY ? SecretBox.fromBase64(config.SECRETS_ENCRYPTION_KEY, config.SECRETS_ENCRYPTION_KEYS_OLD) : null;
}

function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}
