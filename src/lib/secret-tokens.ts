import { createHash, randomBytes } from 'node:crypto';

/** A bearer secret (API key, session cookie, invite or link token): 256 random bits, base64url. */
export function newSecretToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

/**
 * Secrets are stored as SHA-256 digests and looked up by digest through a unique index. A fast
 * hash is enough for 256-bit random secrets, and comparing digests in the index lookup reveals
 * nothing about the secret itself, which is what a timing attack would need.
 */
export function digestToken(token: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(token).digest());
}
