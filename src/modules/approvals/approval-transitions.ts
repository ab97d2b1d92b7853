import { randomUUID } from 'node:crypto';
import { type Actor, type ApprovalWebhookType, type AuditEventDraft } from '../audit/audit-events.js';
import { DECISION_CHANNELS, type PolicyDocument } from '../policies/policy-schemas.js';
import type { PolicyVerdict } from '../policies/policy-rules.js';
import type { ApprovalCreateInput, Decider, DecisionInput, RevisionInput } from './approval-schemas.js';
import type {
  Approval,
  ApprovalStage,
  Creation,
  Delegator,
  NewApproval,
  RevisionRecord,
  Revising,
  Settlement,
  Settling,
  Vote,
} from './approval-types.js';
import { changedFields } from './payload-changes.js';
import { receiptFacts } from './approval-receipts.js';
import { hashPayload } from '../audit/receipt-signing.js';

/** The policy an approval was created under, or none (an orphan) with the orphan timeout. */
export type Governing = (
  | {
      kind: 'policy';
      policy: PolicyDocument;
      verdict: PolicyVerdict;
      /** What the policy's shadow said, which decides nothing; null without a shadow. */
      shadow: ShadowOutcome | null;
    }
  | { kind: 'orphan'; timeoutSeconds: number }
) & {
  /** The policy revision the verdict rests on (null: no policy); creation commits only if it is still current. */
  policyRevision: string | null;
  /** The version of that policy (null: no policy), recorded on the approval. */
  policyVersion: number | null;
};

/** A shadow policy's verdict as the approval and its audit event record it. */
export type ShadowOutcome = Pick<PolicyVerdict, 'outcome' | 'matchedRule'>;

type ApprovalFacts = Pick<Approval, 'id' | 'action' | 'agent'>;
type WebhookFacts = ApprovalFacts &
  Pick<Approval, 'status' | 'policyKey' | 'revision' | 'policyVersion' | 'stages' | 'stage'> & { payload: unknown; payloadHash: string };

function subjectOf(approval: ApprovalFacts) {
  return { approvalId: approval.id, action: approval.action, ...(approval.agent ? { agent: approval.agent } : {}) };
}

/** The stages an approval was created under (docs/policies.md#stages); null for one set of reviewers. */
export function stagesOf(approval: Pick<Approval, 'stages'>): ApprovalStage[] | null {
  return approval.stages as ApprovalStage[] | null;
}

/** The stage under review as the view and the webhook show it: `{ index, name }`, index from 1; null without stages. */
export function currentStage(approval: Pick<Approval, 'stages' | 'stage'>): { index: number; name: string } | null {
  const stages = stagesOf(approval);
  return stages && { index: approval.stage, name: stages[approval.stage - 1]!.name };
}

/** Who decided, as the view and the webhook show it; only members and API keys decide (and ask for changes). */
function deciderOf(actor: Actor): Decider {
  if (actor.type === 'system') throw new Error(`a system actor (${actor.id}) cannot decide an approval`);
  return actor;
}

/** The webhook events of a settlement, which carry its receipt (null on the others). */
const SETTLING_WEBHOOKS: ReadonlySet<ApprovalWebhookType> = new Set([
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.escalated',
  'approval.changes_requested',
]);

function webhookEvent(
  type: ApprovalWebhookType,
  approval: WebhookFacts,
  at: Date,
  fields: {
    verdict: string | null;
    feedback: string | null;
    decidedBy: Decider | null;
    escalatedTo?: string;
    suggestedPayload?: unknown;
    note?: string | null;
  },
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
      policyVersion: approval.policyVersion,
      payloadHash: approval.payloadHash,
      revision: approval.revision,
      stage: currentStage(approval),
      ...fields,
      // Its facts: the delivery signs them with the seq the append gives the event (sealWebhookReceipt).
      receipt: SETTLING_WEBHOOKS.has(type) ? receiptFacts({ ...approval, decidedBy: fields.decidedBy, decidedAt: at }) : null,
    },
  };
}

/** Who may decide when no policy says (orphans): reviewers and admins, one approval, every channel. */
const DEFAULT_DECISION_RULES: Pick<PolicyDocument, 'reviewers' | 'quorum' | 'stages' | 'allowSelfApproval' | 'channels'> = {
  reviewers: { roles: ['reviewer', 'admin'], members: [] },
  quorum: 1,
  stages: null,
  allowSelfApproval: false,
  channels: [...DECISION_CHANNELS],
};

/**
 * What the governing policy's verdict makes of a request, at creation and at each revision: pending
 * with a deadline under the policy's decision rules, or approved at once by the policy. With stages,
 * every revision starts at stage 1, whose reviewers and quorum the policy document carries as its own.
 */
function governedFields(governing: Governing, policyKey: string, now: Date) {
  const autoApproved = governing.kind === 'policy' && governing.verdict.outcome === 'allow';
  const timeoutSeconds = governing.kind === 'policy' ? governing.policy.timeoutSeconds : governing.timeoutSeconds;
  const rules = governing.kind === 'policy' ? governing.policy : DEFAULT_DECISION_RULES;
  return {
    status: autoApproved ? ('approved' as const) : ('pending' as const),
    expiresAt: autoApproved ? null : new Date(now.getTime() + timeoutSeconds * 1000),
    onTimeout: governing.kind === 'policy' ? governing.policy.onTimeout : ('expire' as const),
    escalateTo: governing.kind === 'policy' ? governing.policy.escalateTo : null,
    verdict: autoApproved ? 'approved' : null,
    feedback: null,
    decidedAt: autoApproved ? now : null,
    decidedBy: (autoApproved ? { type: 'policy', id: policyKey } : null) satisfies Decider | null,
    quorum: rules.quorum,
    stages: rules.stages as NewApproval['stages'],
    stage: 1,
    reviewerRoles: rules.reviewers.roles,
    reviewerEmails: rules.reviewers.members,
    allowSelfApproval: rules.allowSelfApproval,
    channels: rules.channels,
    suggestedPayload: null,
    policyVersion: governing.policyVersion,
    policyOutcome: governing.kind === 'policy' ? governing.verdict.outcome : null,
    shadowOutcome: governing.kind === 'policy' ? governing.shadow : null,
  };
}

/** The stage an audit event of an approval with stages names; nothing without stages. */
function stageData(approval: Pick<Approval, 'stages' | 'stage'>) {
  const stage = currentStage(approval);
  return stage ? { stage } : {};
}

/** The policy's part of an audit event of creation or revision: its outcome and the rule that gave it. */
function verdictData(governing: Governing) {
  return {
    outcome: governing.kind === 'policy' ? governing.verdict.outcome : null,
    policyVersion: governing.policyVersion,
    ...(governing.kind === 'policy'
      ? { matchedRule: governing.verdict.matchedRule, ...(governing.verdict.error ? { evaluationError: governing.verdict.error } : {}) }
      : {}),
    ...(governing.kind === 'policy' && governing.shadow ? { shadowOutcome: governing.shadow } : {}),
  };
}

/** The approval by the policy itself of a request it allows, at creation or at a revision. */
function approvedByPolicy(approval: WebhookFacts, actor: Actor, now: Date): AuditEventDraft {
  const decidedBy: Decider = { type: 'policy', id: approval.policyKey };
  return {
    type: 'approval.approved',
    actor,
    createdAt: now,
    data: { ...subjectOf(approval), verdict: 'approved', feedback: null, decidedBy: 'policy' },
    webhook: webhookEvent('approval.approved', approval, now, { verdict: 'approved', feedback: null, decidedBy }),
  };
}

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
  const hash = hashPayload(input.payload);
  const original: RevisionRecord = {
    revision: 1,
    payloadHash: hash,
    note: null,
    feedback: null,
    requestedBy: null,
    at: now.toISOString(),
    idempotencyKey: null,
  };
  const approval: NewApproval & { payloadHash: string } = {
    id: randomUUID(),
    action: input.action,
    payload: input.payload as NewApproval['payload'],
    context: (input.context ?? null) as NewApproval['context'],
    agent: input.agent ?? null,
    policyKey: input.policyKey,
    idempotencyKey: input.idempotencyKey ?? null,
    createdAt: now,
    ...governedFields(governing, input.policyKey, now),
    escalatedFrom,
    escalatedTo: null,
    payloadHash: hash,
    onBehalfOf: input.onBehalfOf ?? null,
    requestedBy: requester && { type: requester.type, id: requester.id },
    revision: 1,
    revisions: [original] as unknown as NewApproval['revisions'],
    receiptSeq: null,
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
        ...stageData(approval),
        ...verdictData(governing),
        expiresAt: approval.expiresAt?.toISOString() ?? null,
        ...(escalatedFrom ? { escalatedFrom } : {}),
      },
    },
  ];
  if (approval.status === 'approved') events.push(approvedByPolicy(approval, actor, now));
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

/**
 * The requester's answer to a request for changes (see docs/api.md#revisions): the same approval,
 * its next revision, with the new payload evaluated again by its policy as at creation (pending
 * with a fresh deadline and the policy's current decision rules, or approved at once). The entry
 * it appends to `revisions` names the feedback and the reviewer that asked for it.
 */
export function reviseApproval(approval: Approval, input: RevisionInput, governing: Governing, actor: Actor, now: Date): Revising {
  const revision = approval.revision + 1;
  const hash = hashPayload(input.payload);
  const context = (input.context === undefined ? approval.context : input.context) as NewApproval['context'];
  const changes = {
    payload: input.payload as NewApproval['payload'],
    payloadHash: hash,
    context,
    revision,
    ...governedFields(governing, approval.policyKey, now),
  };
  const entry: RevisionRecord = {
    revision,
    payloadHash: hash,
    note: input.note ?? null,
    feedback: approval.feedback,
    requestedBy: approval.decidedBy as Decider | null,
    at: now.toISOString(),
    idempotencyKey: input.idempotencyKey ?? null,
    changes: changedFields(approval.payload, input.payload),
  };
  const revised = { ...approval, ...changes };
  const events: AuditEventDraft[] = [
    {
      type: 'approval.revised',
      actor,
      createdAt: now,
      data: {
        ...subjectOf(approval),
        revision,
        status: revised.status,
        payload: input.payload,
        payloadHash: hash,
        ...(context ? { context } : {}),
        note: entry.note,
        feedback: entry.feedback,
        quorum: revised.quorum,
        ...stageData(revised),
        ...verdictData(governing),
        expiresAt: revised.expiresAt?.toISOString() ?? null,
      },
      webhook: webhookEvent('approval.revised', revised, now, {
        verdict: null,
        feedback: entry.feedback,
        decidedBy: null,
        note: entry.note,
      }),
    },
  ];
  if (revised.status === 'approved') events.push(approvedByPolicy(revised, actor, now));
  return { revision, changes, entry, events, policyRevision: governing.policyRevision };
}

const SETTLING_EVENT = {
  approved: 'approval.approved',
  rejected: 'approval.rejected',
  changes_requested: 'approval.changes_requested',
} as const satisfies Record<DecisionInput['verdict'], ApprovalWebhookType>;

/**
 * The settlement a deciding vote makes. A request for changes settles the revision like a
 * rejection, but keeps the deadline: the request expires at it unless the requester revises it.
 */
export function decideApproval(
  approval: Approval,
  decision: DecisionInput,
  actor: Actor,
  now: Date,
  decidedBy = deciderOf(actor),
): Settling {
  const type = SETTLING_EVENT[decision.verdict];
  const feedback = decision.feedback ?? null;
  const onBehalfOf = 'onBehalfOf' in decidedBy && decidedBy.onBehalfOf ? { onBehalfOf: decidedBy.onBehalfOf } : {};
  const edited = decision.editedPayload ? { payload: decision.editedPayload, payloadHash: hashPayload(decision.editedPayload) } : null;
  const changesRequested =
    decision.verdict === 'changes_requested'
      ? { suggestedPayload: decision.suggestedPayload ?? null, expiresAt: approval.expiresAt! }
      : null;
  const settlement: Settlement = {
    status: decision.verdict,
    verdict: decision.verdict,
    feedback,
    decidedAt: now,
    decidedBy,
    ...edited,
    ...changesRequested,
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
          ...onBehalfOf,
          ...(decision.editedPayload ? { editedPayload: decision.editedPayload } : {}),
          ...(changesRequested ? { revision: approval.revision, suggestedPayload: changesRequested.suggestedPayload } : {}),
        },
        webhook: webhookEvent(type, settled, now, {
          verdict: decision.verdict,
          feedback,
          decidedBy,
          ...(changesRequested ? { suggestedPayload: changesRequested.suggestedPayload } : {}),
        }),
      },
    ],
  };
}

/**
 * A vote on a pending approval, every way it can go: the database decides, under the approval's
 * lock, whether it settles the approval (`settling`: a rejection, a request for changes, or the
 * approval that reaches the last stage's quorum), moves it to its next stage (`advanced`: the
 * approval that reaches an earlier stage's quorum), or is recorded while others are still needed
 * (`recorded`). The events are made for the stage the approval was read at, which the vote names:
 * the database refuses it at another (`stage_moved`), and the caller reads it again.
 */
export function voteOn(
  approval: Approval,
  decision: DecisionInput,
  actor: Actor,
  now: Date,
  standingInFor: readonly Delegator[] = [],
): { vote: Vote; recorded: AuditEventDraft[]; advanced: AuditEventDraft[]; settling: Settling } {
  const stages = stagesOf(approval);
  // A delegate's vote is theirs, recorded with whom they stood in for (docs/members-and-channels.md#delegation).
  const onBehalfOf = standingInFor.length > 0 ? { onBehalfOf: [...standingInFor] } : {};
  const by: Decider = { ...deciderOf(actor), ...onBehalfOf };
  const vote: Vote = {
    by,
    verdict: decision.verdict,
    feedback: decision.feedback ?? null,
    at: now.toISOString(),
    stage: stages ? approval.stage : null,
  };
  const recorded: AuditEventDraft[] = [
    {
      type: 'approval.vote_recorded',
      actor,
      createdAt: now,
      data: {
        ...subjectOf(approval),
        verdict: vote.verdict,
        feedback: vote.feedback,
        quorum: approval.quorum,
        ...stageData(approval),
        ...onBehalfOf,
      },
    },
  ];
  const settling = decideApproval(approval, decision, actor, now, by);
  if (!stages || decision.verdict !== 'approved') return { vote, recorded, advanced: [], settling };
  const completed = stageCompleted(approval, stages, vote, actor, now);
  return {
    vote,
    recorded,
    advanced: approval.stage < stages.length ? [completed] : [],
    settling: approval.stage < stages.length ? settling : { ...settling, events: [completed, ...settling.events] },
  };
}

/**
 * A stage reached its quorum (docs/policies.md#stages): the next stage's reviewers are told by the
 * consumers that tell of a pending request (its `status` is `pending` while a stage follows), or,
 * for the last stage, the approval it settles follows in the same commit.
 */
function stageCompleted(approval: Approval, stages: ApprovalStage[], vote: Vote, actor: Actor, now: Date): AuditEventDraft {
  const next = stages[approval.stage];
  return {
    type: 'approval.stage_completed',
    actor,
    createdAt: now,
    data: {
      ...subjectOf(approval),
      revision: approval.revision,
      stage: currentStage(approval),
      quorum: approval.quorum,
      feedback: vote.feedback,
      next: next ? { index: approval.stage + 1, name: next.name } : null,
      status: next ? 'pending' : 'approved',
    },
  };
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
    expiresAt: settlement.expiresAt ?? null,
    suggestedPayload: (settlement.suggestedPayload ?? null) as Approval['suggestedPayload'],
    payload: (settlement.payload ?? approval.payload) as Approval['payload'],
    payloadHash: settlement.payloadHash ?? approval.payloadHash,
    escalatedTo: settlement.escalatedTo ?? approval.escalatedTo,
  };
}

/** The stored hash, or the hash computed now for a row written before hashes were stored. */
export function currentPayloadHash(approval: Pick<Approval, 'payload' | 'payloadHash'>): string {
  return approval.payloadHash ?? hashPayload(approval.payload);
}
