import { createHash, randomUUID } from 'node:crypto';
import { canonicalJson, type Actor, type ApprovalWebhookType, type AuditEventDraft } from '../audit/audit-events.js';
import { DECISION_CHANNELS, type PolicyDocument } from '../policies/policy-schemas.js';
import type { PolicyVerdict } from '../policies/policy-rules.js';
import type { ApprovalCreateInput, Decider, DecisionInput } from './approval-schemas.js';
import type { Approval, Creation, NewApproval, Settlement, Settling, Vote } from './approval-types.js';

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

/** Hex SHA-256 of the RFC 8785 bytes of a payload: what a receiver checks before executing it. */
export function payloadHash(payload: unknown): string {
  return createHash('sha256').update(canonicalJson(payload), 'utf8').digest('hex');
}

/** Who decided, as the view and the webhook show it; only members and API keys decide. */
function deciderOf(actor: Actor): Decider {
  if (actor.type === 'system') throw new Error(`a system actor (${actor.id}) cannot decide an approval`);
  return actor;
}

function webhookEvent(
  type: ApprovalWebhookType,
  approval: ApprovalFacts & Pick<Approval, 'status' | 'policyKey'> & { payload: unknown; payloadHash: string },
  at: Date,
  fields: { verdict: string | null; feedback: string | null; decidedBy: Decider | null; escalatedTo?: string },
): AuditEventDraft['webhook'] {
  return {
    id: randomUUID(),
    type,
    createdAt: at.toISOString(),
    data: {
      approvalId: approval.id,
      status: approval.status,
      action: approval.action,
      payload: approval.payload,
      agent: approval.agent,
      policyKey: approval.policyKey,
      payloadHash: approval.payloadHash,
      ...fields,
    },
  };
}

/** Who may decide when no policy says (orphans): reviewers and admins, one approval, every channel. */
const DEFAULT_DECISION_RULES: Pick<PolicyDocument, 'reviewers' | 'quorum' | 'allowSelfApproval' | 'channels'> = {
  reviewers: { roles: ['reviewer', 'admin'], members: [] },
  quorum: 1,
  allowSelfApproval: false,
  channels: [...DECISION_CHANNELS],
};

/**
 * A new approval under its governing policy. `requester` is who asked: the creating actor, or for
 * an escalation's successor (created by the system) whoever asked for the original, who may not
 * vote on either.
 */
export function createApproval(
  input: ApprovalCreateInput,
  governing: Governing,
  { actor, requester }: { actor: Actor; requester: Pick<Actor, 'type' | 'id'> | null },
  now: Date,
  escalatedFrom: string | null = null,
): Creation {
  const autoApproved = governing.kind === 'policy' && governing.verdict.outcome === 'allow';
  const timeoutSeconds = governing.kind === 'policy' ? governing.policy.timeoutSeconds : governing.timeoutSeconds;
  const decidedBy: Decider | null = autoApproved ? { type: 'policy', id: input.policyKey } : null;
  const rules = governing.kind === 'policy' ? governing.policy : DEFAULT_DECISION_RULES;
  const approval: NewApproval & { payloadHash: string } = {
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
    payloadHash: payloadHash(input.payload),
    decidedBy,
    quorum: rules.quorum,
    reviewerRoles: rules.reviewers.roles,
    reviewerEmails: rules.reviewers.members,
    allowSelfApproval: rules.allowSelfApproval,
    channels: rules.channels,
    onBehalfOf: input.onBehalfOf ?? null,
    requestedBy: requester && { type: requester.type, id: requester.id },
  };

  const subject = subjectOf(approval);
  const events: AuditEventDraft[] = [
    {
      type: 'approval.created',
      actor,
      createdAt: now,
      data: {
        ...subject,
        status: approval.status,
        policyKey: approval.policyKey,
        payload: approval.payload,
        payloadHash: approval.payloadHash,
        ...(approval.context ? { context: approval.context } : {}),
        ...(approval.onBehalfOf ? { onBehalfOf: approval.onBehalfOf } : {}),
        quorum: approval.quorum,
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
      webhook: webhookEvent('approval.approved', approval, now, { verdict: 'approved', feedback: null, decidedBy }),
    });
  }
  if (governing.kind === 'orphan') {
    events.push({
      type: 'approval.orphaned',
      actor,
      createdAt: now,
      data: { ...subject, policyKey: approval.policyKey },
      webhook: webhookEvent('approval.orphaned', approval, now, { verdict: null, feedback: null, decidedBy: null }),
    });
  }
  return { approval, events, policyRevision: governing.policyRevision };
}

export function decideApproval(approval: Approval, decision: DecisionInput, actor: Actor, now: Date): Settling {
  const type = decision.verdict === 'approved' ? 'approval.approved' : 'approval.rejected';
  const feedback = decision.feedback ?? null;
  const decidedBy = deciderOf(actor);
  const edited = decision.editedPayload ? { payload: decision.editedPayload, payloadHash: payloadHash(decision.editedPayload) } : null;
  const settlement: Settlement = {
    status: decision.verdict,
    verdict: decision.verdict,
    feedback,
    decidedAt: now,
    decidedBy,
    ...edited,
  };
  const settled = { ...approval, status: settlement.status, ...(edited ?? { payloadHash: currentPayloadHash(approval) }) };
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
        webhook: webhookEvent(type, settled, now, { verdict: decision.verdict, feedback, decidedBy }),
      },
    ],
  };
}

/**
 * A vote on a pending approval, both ways it can go: the database decides, under the approval's
 * lock, whether it settles the approval (`settling`: a rejection, or the approval that reaches
 * quorum) or is recorded while others are still needed (`recorded`).
 */
export function voteOn(
  approval: Approval,
  decision: DecisionInput,
  actor: Actor,
  now: Date,
): { vote: Vote; recorded: AuditEventDraft[]; settling: Settling } {
  const vote: Vote = { by: deciderOf(actor), verdict: decision.verdict, feedback: decision.feedback ?? null, at: now.toISOString() };
  const recorded: AuditEventDraft[] = [
    {
      type: 'approval.vote_recorded',
      actor,
      createdAt: now,
      data: { ...subjectOf(approval), verdict: vote.verdict, feedback: vote.feedback, quorum: approval.quorum },
    },
  ];
  return { vote, recorded, settling: decideApproval(approval, decision, actor, now) };
}

/**
 * What a pending approval becomes at its deadline: `expired`, or `escalated` with the successor
 * (created under `escalateTo`, evaluated like any new request) that must commit with it.
 */
export function timeOutApproval(approval: Approval, actor: Actor, now: Date, successor: Creation | null): Settling {
  const subject = subjectOf(approval);
  const hash = currentPayloadHash(approval);
  if (approval.onTimeout === 'expire') {
    const settled = { ...approval, status: 'expired' as const, payloadHash: hash };
    return {
      settlement: { status: 'expired', verdict: null, feedback: null, decidedAt: now, decidedBy: null },
      events: [
        {
          type: 'approval.expired',
          actor,
          createdAt: now,
          data: { ...subject, expiresAt: approval.expiresAt?.toISOString() ?? null },
          webhook: webhookEvent('approval.expired', settled, now, { verdict: null, feedback: null, decidedBy: null }),
        },
      ],
    };
  }
  const escalatedTo = successor?.approval.id;
  const settled = { ...approval, status: 'escalated' as const, payloadHash: hash };
  return {
    settlement: {
      status: 'escalated',
      verdict: null,
      feedback: null,
      decidedAt: now,
      decidedBy: null,
      ...(escalatedTo ? { escalatedTo } : {}),
    },
    events: [
      {
        type: 'approval.escalated',
        actor,
        createdAt: now,
        data: { ...subject, escalateTo: approval.escalateTo, escalatedTo: escalatedTo ?? null },
        webhook: webhookEvent('approval.escalated', settled, now, {
          verdict: null,
          feedback: null,
          decidedBy: null,
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
    decidedBy: settlement.decidedBy,
    expiresAt: null,
    payload: (settlement.payload ?? approval.payload) as Approval['payload'],
    payloadHash: settlement.payloadHash ?? approval.payloadHash,
    escalatedTo: settlement.escalatedTo ?? approval.escalatedTo,
  };
}

/** The stored hash, or the hash computed now for a row written before hashes were stored. */
export function currentPayloadHash(approval: Pick<Approval, 'payload' | 'payloadHash'>): string {
  return approval.payloadHash ?? payloadHash(approval.payload);
}
