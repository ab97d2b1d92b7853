import type { ApiKey } from '../../generated/prisma/client.js';
import { digestToken, newSecretToken } from '../../lib/secret-tokens.js';
import type { Actor, AuditEventDraft, AuditEventType } from '../audit/audit-events.js';
import type { KeyOwner } from './key-owner-schema.js';

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

/** The owner of a stored key; null for a service key. */
export function keyOwnerOf(key: Pick<ApiKey, 'ownerType' | 'ownerId'>): KeyOwner | null {
  return key.ownerType && key.ownerId ? { type: key.ownerType, id: key.ownerId } : null;
}

/** The CLI command that gives a key whose owner is unknown its owner, for the messages that name it. */
export function attributeCommand(orgId: string, keyId: string): string {
  return `key:attribute --org ${orgId} --id ${keyId} --member EMAIL|--service`;
}

/**
 * A key's creation or revocation as the audit chain records it. The maker of a key is the actor
 * of its `key.created`: what gave keys made before owners existed theirs.
 */
export function keyEvent(
  type: Extract<AuditEventType, `key.${string}`>,
  actor: Actor,
  key: ApiKey,
  extra: Record<string, unknown> = {},
): AuditEventDraft {
  return {
    type,
    actor,
    createdAt: new Date(),
    data: { keyId: key.id, name: key.name, scopes: key.scopes, owner: keyOwnerOf(key), ...extra },
  };
}
