import type { ReceiptFacts, ReceiptSigner, SignedReceipt } from '../audit/receipt-signing.js';
import type { Decider } from './approval-schemas.js';
import type { Approval } from './approval-types.js';

/** The statuses a person (or a policy) decided: the only ones whose view names who decided and when. */
const DECIDED: ReadonlySet<Approval['status']> = new Set(['approved', 'rejected', 'changes_requested']);

type DecisionFacts = Pick<Approval, 'status' | 'decidedBy' | 'decidedAt'>;

/** Who decided and when, as the view and the receipt show them: null unless decided (expiry and escalation decide nothing). */
export function decisionOf(approval: DecisionFacts): { decidedBy: Decider | null; decidedAt: string | null } {
  const decided = DECIDED.has(approval.status);
  return {
    decidedBy: decided ? ((approval.decidedBy as Decider | null) ?? null) : null,
    decidedAt: decided ? (approval.decidedAt?.toISOString() ?? null) : null,
  };
}

export type ReceiptSubject = Pick<Approval, 'id' | 'revision' | 'status' | 'action' | 'policyKey' | 'policyVersion'> &
  DecisionFacts & { payloadHash: string };

/**
 * What a settlement's receipt states from the approval alone (see docs/receipts.md): the policy
 * version is the one the settled revision was evaluated under (null for an orphan).
 */
export function receiptFacts(approval: ReceiptSubject): ReceiptFacts {
  return {
    approvalId: approval.id,
    revision: approval.revision,
    status: approval.status,
    action: approval.action,
    payloadHash: approval.payloadHash,
    ...decisionOf(approval),
    policyKey: approval.policyKey,
    policyVersion: approval.policyVersion,
  };
}

/**
 * The signed receipt of an approval's current settlement: computed from the settled row and the
 * event that settled it (receipt_seq), not stored, since Ed25519 signs the same bytes the same
 * way every time. Null while pending, and when signing is off.
 */
export function receiptOf(approval: Approval, payloadHash: string, signer: ReceiptSigner | null): SignedReceipt | null {
  if (!signer || approval.status === 'pending' || approval.receiptSeq === null) return null;
  return signer({ ...receiptFacts({ ...approval, payloadHash }), orgId: approval.orgId, seq: Number(approval.receiptSeq) });
}
