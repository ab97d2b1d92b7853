import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Seals secrets that the service must read back (a Slack bot token, a signing secret) with
 * AES-256-GCM under a key from the configuration. Each value gets a fresh 96-bit IV, and the
 * `context` it belongs to (organization and field) is authenticated with it, so a sealed value
 * copied to another row or field no longer opens. The sealed text names the key by a short digest,
 * so a value sealed under another key is refused by name rather than as garbage.
 */
export class SecretBox {
  private readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('a secret box key is 32 bytes');
    this.keyId = createHash('sha256').update(key).digest('hex').slice(0, 8);
  }

  static fromBase64(key: string): SecretBox {
    return new SecretBox(Buffer.from(key, 'base64'));
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, this.keyId, Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')].join('.');
  }

  open(sealed: string, context: string): string {
    const [version, keyId, body] = sealed.split('.');
    if (version !== VERSION || !body) throw new Error('not a sealed secret');
    if (keyId !== this.keyId) throw new Error(`secret sealed under another key (${keyId}); SECRETS_ENCRYPTION_KEY changed`);
    const bytes = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES))
      .setAAD(Buffer.from(context, 'utf8'))
      .setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
