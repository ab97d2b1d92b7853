import { randomUUID } from 'node:crypto';
import type { Actor, AuditEventDraft, WebhookEventType } from '../audit/audit-events.js';
import type { PolicyDocument } from '../policies/policy-schemas.js';
import type { PolicyVerdict } from '../policies/policy-rules.js';
import type { ApprovalCreateInput, DecisionInput } from './approval-schemas.js';
import type { Approval, NewApproval, Settlement } from './approval-store.js';

/**
 * Every state change of an approval, as data: the row to write and the audit events (with their
 * webhook bodies) that must commit with it. The store writes both atomically; nothing else
 * decides what an approval becomes.
 */
export interface Creation {
  approval: NewApproval;
  events: AuditEventDraft[];
  policyRevision: string | null;
}

export interface Settling {
  settlement: Settlement;
  events: AuditEventDraft[];
}

/** The policy an approval was created under, or none (an orphan) with the orphan timeout. */
export type Governing = (
  { kind: 'policy'; policy: PolicyDocument; verdict: PolicyVerdict } | { kind: 'orphan'; timeoutSeconds: number }
) & {
  /** The policy revision the verdict rests on (null: no policy); creation commits only if it is still current. */
  policyRevision: string | null;
};

type ApprovalFacts = Pick<Approval, 'id' | 'action' | 'agent'>;

function subjectOf(approval: ApprovalFacts) {
  return { approvalId: approval.id, action: approval.action, ...(approval.agent ? { agent: approval.agent } : {}) };
}

function webhookEvent(
  type: WebhookEventType,
  approval: ApprovalFacts & { status: string; payload: unknown },
  at: Date,
  fields: { verdict: string | null; feedback: string | null; escalatedTo?: string },
): AuditEventDraft['webhook'] {
  return {
    id: randomUUID(),
    type,
    createdAt: at.toISOString(),
    data: { approvalId: approval.id, status: approval.status, action: approval.action, payload: approval.payload, ...fields },
  };
}

export function createApproval(
  input: ApprovalCreateInput,
  governing: Governing,
  actor: Actor,
  now: Date,
  escalatedFrom: string | null = null,
): Creation {
  const autoApproved = governing.kind === 'policy' && governing.verdict.outcome === 'allow';
  const timeoutSeconds = governing.kind === 'policy' ? governing.policy.timeoutSeconds : governing.timeoutSeconds;
  const approval: NewApproval = {
    id: randomUUID(),
    status: autoApproved ? 'approved' : 'pending',
    action: input.action,
    payload: input.payload as NewApproval['payload'],
    context: (input.context ?? null) as NewApproval['context'],
    agent: input.agent ?? null,
    policyKey: input.policyKey,
    idempotencyKey: input.idempotencyKey ?? null,
    createdAt: now,
    expiresAt: autoApproved ? null : new Date(now.getTime() + timeoutSeconds * 1000),
    onTimeout: governing.kind === 'policy' ? governing.policy.onTimeout : 'expire',
    escalateTo: governing.kind === 'policy' ? governing.policy.escalateTo : null,
    verdict: autoApproved ? 'approved' : null,
    feedback: null,
    decidedAt: autoApproved ? now : null,
    escalatedFrom,
    escalatedTo: null,
  };

  const subject = subjectOf(approval);
  const events: AuditEventDraft[] = [
    {
      type: 'approval.created',
      actor,
      createdAt: now,
      data: {
        ...subject,
        policyKey: approval.policyKey,
        payload: approval.payload,
        ...(approval.context ? { context: approval.context } : {}),
        outcome: governing.kind === 'policy' ? governing.verdict.outcome : null,
        ...(governing.kind === 'policy'
          ? { matchedRule: governing.verdict.matchedRule, ...(governing.verdict.error ? { evaluationError: governing.verdict.error } : {}) }
          : {}),
        expiresAt: approval.expiresAt?.toISOString() ?? null,
        ...(escalatedFrom ? { escalatedFrom } : {}),
      },
    },
  ];
  if (autoApproved) {
    events.push({
      type: 'approval.approved',
      actor,
      createdAt: now,
      data: { ...subject, verdict: 'approved', feedback: null, decidedBy: 'policy' },
      webhook: webhookEvent('approval.approved', approval, now, { verdict: 'approved', feedback: null }),
    });
  }
  if (governing.kind === 'orphan') {
    events.push({
      type: 'approval.orphaned',
      actor,
      createdAt: now,
      data: { ...subject, policyKey: approval.policyKey },
      webhook: webhookEvent('approval.orphaned', approval, now, { verdict: null, feedback: null }),
    });
  }
  return { approval, events, policyRevision: governing.policyRevision };
}

export function decideApproval(approval: Approval, decision: DecisionInput, actor: Actor, now: Date): Settling {
  const type = decision.verdict === 'approved' ? 'approval.approved' : 'approval.rejected';
  const feedback = decision.feedback ?? null;
  const settlement: Settlement = {
    status: decision.verdict,
    verdict: decision.verdict,
    feedback,
    decidedAt: now,
    ...(decision.editedPayload ? { payload: decision.editedPayload } : {}),
  };
  const settled = { ...approval, status: settlement.status, payload: decision.editedPayload ?? approval.payload };
  return {
    settlement,
    events: [
      {
        type,
        actor,
        createdAt: now,
        data: {
          ...subjectOf(approval),
          verdict: decision.verdict,
          feedback,
          ...(decision.editedPayload ? { editedPayload: decision.editedPayload } : {}),
        },
        webhook: webhookEvent(type, settled, now, { verdict: decision.verdict, feedback }),
      },
    ],
  };
}

/**
 * What a pending approval becomes at its deadline: `expired`, or `escalated` with the successor
 * (created under `escalateTo`, evaluated like any new request) that must commit with it.
 */
export function timeOutApproval(approval: Approval, actor: Actor, now: Date, successor: Creation | null): Settling {
  const subject = subjectOf(approval);
  if (approval.onTimeout === 'expire') {
    const settled = { ...approval, status: 'expired' as const };
    return {
      settlement: { status: 'expired', verdict: null, feedback: null, decidedAt: now },
      events: [
        {
          type: 'approval.expired',
          actor,
          createdAt: now,
          data: { ...subject, expiresAt: approval.expiresAt?.toISOString() ?? null },
          webhook: webhookEvent('approval.expired', settled, now, { verdict: null, feedback: null }),
        },
      ],
    };
  }
  const escalatedTo = successor?.approval.id;
  const settled = { ...approval, status: 'escalated' as const };
  return {
    settlement: { status: 'escalated', verdict: null, feedback: null, decidedAt: now, ...(escalatedTo ? { escalatedTo } : {}) },
    events: [
      {
        type: 'approval.escalated',
        actor,
        createdAt: now,
        data: { ...subject, escalateTo: approval.escalateTo, escalatedTo: escalatedTo ?? null },
        webhook: webhookEvent('approval.escalated', settled, now, {
          verdict: null,
          feedback: null,
          ...(escalatedTo ? { escalatedTo } : {}),
        }),
      },
    ],
  };
}

/** The approval as it reads after a settlement committed, without reading it back. */
export function applySettlement(approval: Approval, settlement: Settlement): Approval {
  return {
    ...approval,
    status: settlement.status,
    verdict: settlement.verdict,
    feedback: settlement.feedback,
    decidedAt: settlement.decidedAt,
    expiresAt: null,
    payload: (settlement.payload ?? approval.payload) as Approval['payload'],
    escalatedTo: settlement.escalatedTo ?? approval.escalatedTo,
  };
}
