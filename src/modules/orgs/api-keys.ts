import { digestToken, newSecretToken } from '../../lib/secret-tokens.js';

const KEY_PREFIX = 'agk_';

/** A new API key: 32 random bytes, base64url, with a prefix that secret scanners can match. */
export function generateApiKey(): string {
  return newSecretToken(KEY_PREFIX);
}

/** Keys are stored as digests only (see digestToken). */
export const hashApiKey = digestToken;

/** Cheap shape check so that garbage never costs a database round trip. */
export function looksLikeApiKey(candidate: string): boolean {
  return candidate.startsWith(KEY_PREFIX) && candidate.length === KEY_PREFIX.length + 43;
}
