import type { Approval } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import type { MemberRole } from '../orgs/tenant.js';
import type { Decider } from './approval-schemas.js';

export type { Approval };
export type NewApproval = Omit<Approval, 'orgId'>;

/** A vote as the view and the database keep it. */
export interface Vote {
  by: Decider;
  verdict: 'approved' | 'rejected';
  feedback: string | null;
  at: string;
}

/** An approval as read: the row and its votes. */
export type ApprovalRecord = Approval & { votes: Vote[] };

/** Who votes, as the database's decision rules read it (see ag_decision_refusal): the credential, whose principal the database resolves. */
export type VoterRecord = { type: 'api_key'; id: string } | { type: 'user'; id: string; email: string; role: MemberRole };

export type VoteOutcome = 'recorded' | 'settled' | 'not_pending' | 'duplicate_voter' | DecisionRefusal;
export type DecisionRefusal = 'not_a_reviewer' | 'self_approval' | 'channel_not_allowed' | 'key_unattributed' | 'requester_unattributed';

/** The terminal fields a settlement writes; `payload` and its hash only when a reviewer edited it. */
export interface Settlement {
  status: Approval['status'];
  verdict: string | null;
  feedback: string | null;
  decidedAt: Date;
  decidedBy: Decider | null;
  payload?: unknown;
  payloadHash?: string;
  escalatedTo?: string;
}

/**
 * A new approval as data, as approval-transitions.ts (where every state change is decided) makes
 * it: the row to write and the audit events (with their webhook bodies) that must commit with it.
 * The store writes both atomically.
 */
export interface Creation {
  approval: NewApproval;
  events: AuditEventDraft[];
  policyRevision: string | null;
}

/** A settlement as data, likewise: the terminal fields and the audit events that commit with them. */
export interface Settling {
  settlement: Settlement;
  events: AuditEventDraft[];
}
