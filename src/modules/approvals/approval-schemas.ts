import { z } from 'zod';
import { jsonObject, queryInteger, storableString } from '../../lib/json-input.js';

export const approvalCreateSchema = z
  .object({
    action: storableString('action').min(1).max(200),
    payload: jsonObject('payload').meta({ description: 'JSON object evaluated by the policy.' }),
    policyKey: storableString('policyKey').min(1).max(200),
    context: jsonObject('context').nullish().meta({ description: 'Reviewer-facing reasoning; not evaluated.' }),
    agent: storableString('agent').min(1).max(200).nullish(),
    idempotencyKey: storableString('idempotencyKey').min(1).max(255).optional(),
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

export const approvalViewSchema = z
  .object({
    id: z.uuid(),
    status: z.enum(['pending', 'approved', 'rejected', 'expired', 'escalated']),
    action: z.string(),
    payload: jsonObject('payload'),
    context: jsonObject('context').optional(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime().nullable(),
    feedback: z.string().nullable(),
    escalatedTo: z.uuid().optional(),
    escalatedFrom: z.uuid().optional(),
  })
  .meta({ id: 'ApprovalRequestView' });
export type ApprovalView = z.output<typeof approvalViewSchema>;
