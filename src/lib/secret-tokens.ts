import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A bearer secret (API key, session cookie, invite or link token): 256 random bits, base64url. */
export function newSecretToken(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

/**
 * Compares a presented secret with the expected one in constant time: both are digested first,
 * so neither the content nor the length of the expected secret leaks through timing.
 */
export function secretsEqual(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(expected));
}

/**
 * Secrets are stored as SHA-256 digests and looked up by digest through a unique index. A fast
 * hash is enough for 256-bit random secrets, and comparing digests in the index lookup reveals
 * nothing about the secret itself, which is what a timing attack would need.
 */
export function digestToken(token: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(token).digest());
}
