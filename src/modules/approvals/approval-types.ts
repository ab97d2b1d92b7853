import type { Approval } from '../../generated/prisma/client.js';
import type { AuditEventDraft } from '../audit/audit-events.js';
import type { MemberRole } from '../orgs/tenant.js';
import type { Decider, VoteVerdict } from './approval-schemas.js';
import type { ChangedFields } from './payload-changes.js';

export type { Approval };
export type NewApproval = Omit<Approval, 'orgId'>;

/** A vote as the view and the database keep it. */
/** A member a delegate stood in for (ag_stands_in_for). */
export interface Delegator {
  id: string;
  email: string;
}

export interface Vote {
  by: Decider;
  verdict: VoteVerdict;
  feedback: string | null;
  at: string;
  /** The stage it was cast in (docs/policies.md#stages); null without stages. */
  stage: number | null;
}

/** A stage as an approval keeps it (approvals.stages): the policy's, fixed when the revision was created. */
export interface ApprovalStage {
  name: string;
  reviewers: { roles: string[]; members: string[] };
  quorum: number;
}

/**
 * A revision as the row keeps it (approvals.revisions): the view's fields, the revision's
 * idempotency key, and which fields it changed from the revision before (what notices list; absent
 * for the original and for revisions written before it was kept). Neither of the last two is shown.
 */
export interface RevisionRecord {
  revision: number;
  payloadHash: string;
  note: string | null;
  feedback: string | null;
  requestedBy: Decider | null;
  at: string;
  idempotencyKey: string | null;
  changes?: ChangedFields;
}

/** An approval as read: the row and its votes. */
export type ApprovalRecord = Approval & { votes: Vote[] };

/** Who votes, as the database's decision rules read it (see ag_decision_refusal): the credential, whose principal the database resolves. */
export type VoterRecord = { type: 'api_key'; id: string } | { type: 'user'; id: string; email: string; role: MemberRole };

export type VoteOutcome = 'recorded' | 'advanced' | 'settled' | 'stage_moved' | 'not_pending' | 'duplicate_voter' | DecisionRefusal;

/**
 * What ag_revise_approval answered: `revised`; `duplicate` (the idempotency key made an earlier
 * revision); `forbidden` (not the requester's principal); `not_changes_requested` (no request for
 * changes is open, or it is past its deadline, or another revision came first); `limit_reached`;
 * `stale_policy` (evaluate again); `not_found`.
 */
export type ReviseOutcome =
  'revised' | 'duplicate' | 'forbidden' | 'not_changes_requested' | 'limit_reached' | 'stale_policy' | 'not_found';
export type DecisionRefusal = 'not_a_reviewer' | 'self_approval' | 'channel_not_allowed' | 'key_unattributed' | 'requester_unattributed';

/**
 * The fields a settlement writes; `payload` and its hash only when a reviewer edited it. A request
 * for changes keeps its deadline (`expiresAt`) and may carry a suggested payload; every other
 * settlement clears the deadline.
 */
export interface Settlement {
  status: Approval['status'];
  verdict: string | null;
  feedback: string | null;
  decidedAt: Date;
  decidedBy: Decider | null;
  payload?: unknown;
  payloadHash?: string;
  escalatedTo?: string;
  expiresAt?: Date;
  suggestedPayload?: unknown;
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

/**
 * A revision as data, as approval-transitions.ts makes it: the columns it rewrites (the new payload,
 * the policy's fresh verdict and rules, the deadline), the entry it appends to `revisions`, and the
 * audit events that commit with it. `revision` is the number it takes: the database writes it only
 * over the revision it was made from.
 */
export interface Revising {
  revision: number;
  changes: Partial<NewApproval>;
  entry: RevisionRecord;
  events: AuditEventDraft[];
  policyRevision: string | null;
}
