import { z } from 'zod';
import { jsonObject, queryInteger, storableInstant, storableString } from '../../lib/json-input.js';
import { keyOwnerSchema } from '../orgs/key-owner-schema.js';
import { pageLimitSchema } from '../../lib/paging.js';
import { MAX_STANDING_SECONDS } from '../policies/policy-schemas.js';

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'escalated', 'changes_requested'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export const approvalCreateSchema = z
  .object({
    action: storableString('action').min(1).max(200),
    payload: jsonObject('payload').meta({ description: 'JSON object evaluated by the policy.' }),
    policyKey: storableString('policyKey').min(1).max(200),
    context: jsonObject('context').nullish().meta({ description: 'Reviewer-facing reasoning; not evaluated.' }),
    agent: storableString('agent').min(1).max(200).nullish(),
    idempotencyKey: storableString('idempotencyKey').min(1).max(255).optional(),
    onBehalfOf: z.email().max(320).nullish().meta({ description: 'The email of the member the agent acts for; they may not vote on it.' }),
  })
  .meta({ id: 'ApprovalCreateInput' });
export type ApprovalCreateInput = z.output<typeof approvalCreateSchema>;

/** What a vote may say (see docs/api.md): approve, reject, or ask the requester to change the request. */
export const VOTE_VERDICTS = ['approved', 'rejected', 'changes_requested'] as const;
export type VoteVerdict = (typeof VOTE_VERDICTS)[number];

/** The longest feedback a request for changes may carry: what the agent is to read and act on. */
export const MAX_CHANGES_FEEDBACK = 2000;

export const decisionSchema = z
  .object({
    verdict: z.enum(VOTE_VERDICTS),
    feedback: storableString('feedback')
      .max(5000)
      .optional()
      .meta({ description: `Required with verdict changes_requested (1-${MAX_CHANGES_FEEDBACK} characters): what to change.` }),
    editedPayload: jsonObject('editedPayload').optional().meta({ description: 'Approves with this payload instead.' }),
    standing: z
      .strictObject({
        forSeconds: z
          .number()
          .int()
          .min(60)
          .max(MAX_STANDING_SECONDS)
          .meta({ description: "How long identical requests are approved for; at most the policy's standingApproval.maxSeconds." }),
        fields: z.array(storableString('standing.fields').min(1).max(200)).min(1).max(20).optional().meta({
          description: 'Top-level payload fields whose values a later request must repeat; without it, the whole payload must be the same.',
        }),
      })
      .optional()
      .meta({
        description:
          'With verdict approved: also approve identical later requests (same policy, action, agent and requesting principal) for forSeconds; see docs/policies.md#standing-approvals.',
      }),
    suggestedPayload: jsonObject('suggestedPayload')
      .optional()
      .meta({ description: 'With verdict changes_requested: a payload the reviewer would approve, for the requester to consider.' }),
    revision: z
      .number()
      .int()
      .min(1)
      .optional()
      .meta({ description: 'The revision the voter read: the vote is refused (409) once the approval is at another one.' }),
  })
  .superRefine((decision, ctx) => {
    if (decision.editedPayload !== undefined && decision.verdict !== 'approved') {
      ctx.addIssue({ code: 'custom', path: ['editedPayload'], message: 'editedPayload is only allowed with verdict approved' });
    }
    if (decision.suggestedPayload !== undefined && decision.verdict !== 'changes_requested') {
      ctx.addIssue({
        code: 'custom',
        path: ['suggestedPayload'],
        message: 'suggestedPayload is only allowed with verdict changes_requested',
      });
    }
    if (decision.standing && decision.verdict !== 'approved') {
      ctx.addIssue({ code: 'custom', path: ['standing'], message: 'standing is only allowed with verdict approved' });
    }
    if (decision.standing && decision.editedPayload) {
      ctx.addIssue({
        code: 'custom',
        path: ['standing'],
        message: 'standing approves the payload as it is: it cannot go with editedPayload',
      });
    }
    if (decision.verdict === 'changes_requested' && !decision.feedback) {
      ctx.addIssue({
        code: 'custom',
        path: ['feedback'],
        message: 'feedback is required with verdict changes_requested: say what to change',
      });
    }
    if (decision.verdict === 'changes_requested' && (decision.feedback?.length ?? 0) > MAX_CHANGES_FEEDBACK) {
      ctx.addIssue({
        code: 'custom',
        path: ['feedback'],
        message: `feedback of a request for changes must be at most ${MAX_CHANGES_FEEDBACK} characters`,
      });
    }
  })
  .meta({ id: 'DecisionInput' });
export type DecisionInput = z.output<typeof decisionSchema>;

/** Unknown and repeated parameters are refused: `?wiat=30` would otherwise answer at once, silently. */
export const approvalReadQuerySchema = z.strictObject({
  wait: queryInteger('wait', 1, 30).optional().meta({ description: 'Seconds to hold the request while the approval is pending.' }),
});

export const approvalIdParamsSchema = z.object({ id: z.uuid() });

/**
 * Who approved or rejected (see docs/api.md): a member, an API key (with its owner when it has one), or
 * the policy itself for an auto-approval.
 */
const onBehalfOfSchema = z
  .array(z.object({ id: z.uuid(), email: z.string() }))
  .optional()
  .meta({
    description:
      'The members this voter stood in for, as their delegate (docs/members-and-channels.md#delegation); absent when they stood in for no one.',
  });

export const deciderSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('user'), id: z.uuid(), email: z.string(), onBehalfOf: onBehalfOfSchema }),
    z.object({
      type: z.literal('api_key'),
      id: z.uuid(),
      owner: keyOwnerSchema
        .optional()
        .meta({ description: 'The member or service key the key belongs to, who voted through it; absent for a service key.' }),
      onBehalfOf: onBehalfOfSchema,
    }),
    z.object({ type: z.literal('policy'), id: z.string().meta({ description: 'The policy key.' }) }),
  ])
  .meta({ id: 'Decider' });
export type Decider = z.output<typeof deciderSchema>;

export const voteSchema = z
  .object({
    by: deciderSchema,
    verdict: z.enum(VOTE_VERDICTS),
    feedback: z.string().nullable(),
    at: z.iso.datetime(),
    stage: z
      .number()
      .int()
      .min(1)
      .nullable()
      .meta({ description: 'The stage the vote was cast in, from 1 (docs/policies.md#stages); null when the policy names no stages.' }),
  })
  .meta({ id: 'Vote' });

/** The stage of reviewers an approval is in (docs/policies.md#stages). */
export const approvalStageSchema = z
  .object({
    index: z.number().int().min(1).meta({ description: 'From 1.' }),
    name: z.string(),
  })
  .meta({ id: 'ApprovalStage' });

/** A revision of an approval's payload (see docs/api.md#revisions); the original is revision 1. */
export const revisionSchema = z
  .object({
    revision: z.number().int().min(1),
    payloadHash: z.string().meta({ description: 'Hex SHA-256 of the RFC 8785 bytes of the payload this revision submitted.' }),
    note: z.string().nullable().meta({ description: "The requester's note on what changed; null for the original." }),
    feedback: z
      .string()
      .nullable()
      .meta({ description: 'The feedback of the request for changes that asked for it; null for the original.' }),
    requestedBy: deciderSchema.nullable().meta({ description: 'Who asked for the changes; null for the original.' }),
    at: z.iso.datetime(),
  })
  .meta({ id: 'ApprovalRevision' });
export type RevisionView = z.output<typeof revisionSchema>;

/** The revisions after the original that one approval may have. */
export const MAX_REVISIONS = 10;

export const revisionInputSchema = z
  .object({
    payload: jsonObject('payload').meta({ description: 'The revised payload, evaluated by the policy again.' }),
    context: jsonObject('context').nullish().meta({ description: 'Replaces the context when given; kept when left out.' }),
    note: storableString('note').min(1).max(2000).nullish().meta({ description: 'What changed, for the reviewers.' }),
    idempotencyKey: storableString('idempotencyKey')
      .min(1)
      .max(255)
      .optional()
      .meta({ description: "A replay with the same key answers the revision it made, once per approval's revisions." }),
  })
  .meta({ id: 'RevisionInput' });
export type RevisionInput = z.output<typeof revisionInputSchema>;

export const receiptSchema = z
  .object({
    orgId: z.uuid(),
    approvalId: z.uuid(),
    revision: z.number().int().min(1),
    status: z.enum(APPROVAL_STATUSES),
    action: z.string(),
    payloadHash: z
      .string()
      .meta({ description: 'Hex SHA-256 of the RFC 8785 bytes of the payload to execute (the edited one when a reviewer edited it).' }),
    decidedBy: deciderSchema.nullable(),
    decidedAt: z.iso.datetime().nullable(),
    policyKey: z.string(),
    policyVersion: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The policy version the approval was evaluated under; null when not recorded.' }),
    seq: z.number().int().meta({ description: "The audit event that settled it, in the organization's log." }),
    keyId: z.string().meta({ description: 'The signing key, as GET /v1/audit/keys lists it.' }),
  })
  .meta({ id: 'Receipt' });

export const signedReceiptSchema = z
  .object({
    receipt: receiptSchema,
    signature: z.string().meta({ description: 'Base64 Ed25519 signature over the RFC 8785 bytes of `receipt`.' }),
  })
  .meta({ id: 'SignedReceipt', description: 'A settlement signed with the audit signing key (see docs/receipts.md).' });

export const approvalViewSchema = z
  .object({
    id: z.uuid(),
    status: z.enum(APPROVAL_STATUSES),
    action: z.string(),
    payload: jsonObject('payload'),
    context: jsonObject('context').optional(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime().nullable(),
    feedback: z.string().nullable(),
    escalatedTo: z.uuid().optional(),
    escalatedFrom: z.uuid().optional(),
    agent: z.string().nullable(),
    policyKey: z.string(),
    policyVersion: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The version of the policy the current revision was evaluated under; null for an orphan.' }),
    payloadHash: z.string().meta({ description: 'Hex SHA-256 of the RFC 8785 bytes of `payload`.' }),
    decidedBy: deciderSchema.nullable().meta({ description: 'Null unless approved, rejected or changes_requested.' }),
    decidedAt: z.iso.datetime().nullable().meta({ description: 'Null unless approved, rejected or changes_requested.' }),
    quorum: z.number().int().meta({ description: 'Distinct approvals needed (with stages, in the current stage).' }),
    stage: approvalStageSchema.nullable().meta({
      description:
        'The stage under review, or the one that settled the request; null when its policy names no stages (docs/policies.md#stages).',
    }),
    votes: z.array(voteSchema),
    onBehalfOf: z.string().nullable(),
    createdByKey: z
      .object({
        id: z.uuid(),
        name: z.string().nullable().meta({ description: "The key's name as it is now; null for a key made without one." }),
      })
      .nullable()
      .optional()
      .meta({
        description:
          'Only with `include=createdByKey` on the listing: the API key that created the request; null when no key did, or its creator was not recorded.',
      }),
    revision: z.number().int().min(1).meta({ description: 'The revision under review: 1 for the original.' }),
    revisions: z.array(revisionSchema).meta({ description: 'Every revision so far, the original first.' }),
    suggestedPayload: jsonObject('suggestedPayload')
      .nullable()
      .optional()
      .meta({ description: 'Only while status is changes_requested: the payload the reviewer suggested, or null.' }),
    receipt: signedReceiptSchema
      .nullable()
      .meta({ description: 'The signed receipt of the settlement; null while pending, and when the service signs no receipts.' }),
  })
  .meta({ id: 'ApprovalRequestView' });
export type ApprovalView = z.output<typeof approvalViewSchema>;

/** Query of GET /v1/approvals (see docs/api.md). Unknown parameters are refused: a misspelt filter would list everything. */
export const approvalListQuerySchema = z
  .strictObject({
    status: z
      .string()
      .transform((value, ctx) => {
        const statuses = [...new Set(value.split(','))];
        const unknown = statuses.find((status) => !(APPROVAL_STATUSES as readonly string[]).includes(status));
        if (unknown === undefined) return statuses as ApprovalStatus[];
        ctx.addIssue({
          code: 'custom',
          message: `status must be one or more of ${APPROVAL_STATUSES.join(', ')}, comma-separated; '${unknown}' is not one`,
        });
        return z.NEVER;
      })
      .optional()
      .meta({ description: 'One status or a comma-separated list.' }),
    action: storableString('action').min(1).max(200).optional(),
    agent: storableString('agent').min(1).max(200).optional(),
    policyKey: storableString('policyKey').min(1).max(200).optional(),
    from: storableInstant('from').optional().meta({ description: 'Created at or after (ISO 8601).' }),
    to: storableInstant('to').optional().meta({ description: 'Created at or before (ISO 8601).' }),
    limit: pageLimitSchema,
    cursor: storableString('cursor').min(1).max(200).optional().meta({ description: 'Opaque: the `nextCursor` of the previous page.' }),
    decidable: z
      .enum(['true', 'false'])
      .transform((value) => value === 'true')
      .optional()
      .meta({ description: 'true: only pending approvals the caller may decide and has not voted on (the console inbox).' }),
    include: z
      .enum(['createdByKey'])
      .optional()
      .meta({ description: 'createdByKey: each approval also names the API key that created it (the console inbox).' }),
  })
  .refine((query) => !query.from || !query.to || query.from <= query.to, { path: ['to'], message: 'to must not be before from' });
export type ApprovalListQuery = z.output<typeof approvalListQuerySchema>;

export const approvalListSchema = z
  .object({
    approvals: z.array(approvalViewSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'ApprovalList' });
