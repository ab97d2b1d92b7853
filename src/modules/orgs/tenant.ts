import type { Plan } from '../../generated/prisma/client.js';
import type { Actor } from '../audit/audit-events.js';

export const SCOPES = [
  'approvals:write',
  'approvals:read',
  'approvals:decide',
  'audit:read',
  'webhooks:write',
  'webhooks:read',
  'policies:read',
  'policies:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export const PLANS = ['free', 'pro', 'enterprise'] as const satisfies readonly Plan[];
export type { Plan };

/** The authenticated caller: the organization every query is scoped to, and who acts. */
export interface Tenant {
  orgId: string;
  plan: Plan;
  keyId: string;
  scopes: ReadonlySet<string>;
  actor: Actor;
}
