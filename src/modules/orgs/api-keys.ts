import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'agk_';

/** A new API key: 32 random bytes, base64url, with a prefix that secret scanners can match. */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Keys are stored as SHA-256 digests and looked up by digest through a unique index. A fast hash
 * is enough for 256-bit random secrets, and comparing digests in the index lookup reveals nothing
 * about the key itself, which is what a timing attack would need.
 */
export function hashApiKey(key: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(key).digest());
}

/** Cheap shape check so that garbage never costs a database round trip. */
export function looksLikeApiKey(candidate: string): boolean {
  return candidate.startsWith(KEY_PREFIX) && candidate.length === KEY_PREFIX.length + 43;
}
