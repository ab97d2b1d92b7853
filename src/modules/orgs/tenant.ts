import type { MemberRole, Plan } from '../../generated/prisma/client.js';
import type { Actor } from '../audit/audit-events.js';
import type { KeyOwner } from './key-owner-schema.js';

export const SCOPES = [
  'approvals:write',
  'approvals:read',
  'approvals:decide',
  'audit:read',
  'webhooks:write',
  'webhooks:read',
  'policies:read',
  'policies:write',
  'members:read',
  'members:write',
  'integrations:read',
  'integrations:write',
  'keys:read',
  'keys:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const PLANS = ['free', 'pro', 'enterprise'] as const satisfies readonly Plan[];
export type { Plan };

export const ROLES = ['admin', 'reviewer', 'viewer'] as const satisfies readonly MemberRole[];
export type { MemberRole };

const VIEWER_SCOPES = [
  'approvals:read',
  'audit:read',
  'policies:read',
  'webhooks:read',
  'members:read',
] as const satisfies readonly Scope[];

/** What a signed-in member may do, as if holding an API key with these scopes (see docs/members-and-channels.md). */
export const ROLE_SCOPES: Record<MemberRole, ReadonlySet<Scope>> = {
  viewer: new Set(VIEWER_SCOPES),
  reviewer: new Set([...VIEWER_SCOPES, 'approvals:decide']),
  admin: new Set(SCOPES),
};

/**
 * How the caller proved who it is: an API key (with its owner, and whether whose it is is unknown:
 * see docs/members-and-channels.md#keys-made-before-owners), or a member's session cookie.
 */
export type Principal =
  | { type: 'api_key'; keyId: string; owner: KeyOwner | null; ownerUnknown: boolean }
  | { type: 'session'; sessionId: string; memberId: string; email: string; role: MemberRole; csrfToken: string };

/** The authenticated caller: the organization every query is scoped to, and who acts. */
export interface Tenant {
  orgId: string;
  plan: Plan;
  scopes: ReadonlySet<string>;
  actor: Actor;
  principal: Principal;
}

/**
 * The principal a caller stands for, as `ag_principal_key` spells it (`user:<member id>` or
 * `api_key:<service key id>`, see docs/members-and-channels.md#principals): a member's session
 * and every key they own are the member; a service key and every key it made are the service key.
 * Owners are resolved when a key is read, so this needs no query.
 */
export function principalKey(principal: Principal): string {
  if (principal.type === 'session') return `user:${principal.memberId}`;
  if (!principal.owner) return `api_key:${principal.keyId}`;
  return principal.owner.type === 'user' ? `user:${principal.owner.id}` : `api_key:${principal.owner.id}`;
}
