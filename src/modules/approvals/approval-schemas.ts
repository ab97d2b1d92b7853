import { z } from 'zod';
import { jsonObject, queryInteger, storableInstant, storableString } from '../../lib/json-input.js';
import { keyOwnerSchema } from '../orgs/key-owner-schema.js';
import { pageLimitSchema } from '../../lib/paging.js';

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'escalated'] as const;
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

export const decisionSchema = z
  .object({
    verdict: z.enum(['approved', 'rejected']),
    feedback: storableString('feedback').max(5000).optional(),
    editedPayload: jsonObject('editedPayload').optional().meta({ description: 'Approves with this payload instead.' }),
  })
  .refine((decision) => decision.editedPayload === undefined || decision.verdict === 'approved', {
    path: ['editedPayload'],
    message: 'editedPayload is only allowed with verdict approved',
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
export const deciderSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('user'), id: z.uuid(), email: z.string() }),
    z.object({
      type: z.literal('api_key'),
      id: z.uuid(),
      owner: keyOwnerSchema
        .optional()
        .meta({ description: 'The member or service key the key belongs to, who voted through it; absent for a service key.' }),
    }),
    z.object({ type: z.literal('policy'), id: z.string().meta({ description: 'The policy key.' }) }),
  ])
  .meta({ id: 'Decider' });
export type Decider = z.output<typeof deciderSchema>;

export const voteSchema = z
  .object({
    by: deciderSchema,
    verdict: z.enum(['approved', 'rejected']),
    feedback: z.string().nullable(),
    at: z.iso.datetime(),
  })
  .meta({ id: 'Vote' });

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
    payloadHash: z.string().meta({ description: 'Hex SHA-256 of the RFC 8785 bytes of `payload`.' }),
    decidedBy: deciderSchema.nullable().meta({ description: 'Null unless approved or rejected.' }),
    decidedAt: z.iso.datetime().nullable().meta({ description: 'Null unless approved or rejected.' }),
    quorum: z.number().int().meta({ description: 'Distinct approvals needed.' }),
    votes: z.array(voteSchema),
    onBehalfOf: z.string().nullable(),
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
  })
  .refine((query) => !query.from || !query.to || query.from <= query.to, { path: ['to'], message: 'to must not be before from' });
export type ApprovalListQuery = z.output<typeof approvalListQuerySchema>;

export const approvalListSchema = z
  .object({
    approvals: z.array(approvalViewSchema),
    nextCursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
  })
  .meta({ id: 'ApprovalList' });
