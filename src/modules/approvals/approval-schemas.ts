import { z } from 'zod';

const jsonObject = z.record(z.string(), z.unknown());

export const approvalCreateSchema = z
  .object({
    action: z.string().min(1).max(200),
    payload: jsonObject.meta({ description: 'JSON object evaluated by the policy.' }),
    policyKey: z.string().min(1).max(200),
    context: jsonObject.nullish().meta({ description: 'Reviewer-facing reasoning; not evaluated.' }),
    agent: z.string().min(1).max(200).nullish(),
    idempotencyKey: z.string().min(1).max(255).optional(),
  })
  .meta({ id: 'ApprovalCreateInput' });
export type ApprovalCreateInput = z.output<typeof approvalCreateSchema>;

export const decisionSchema = z
  .object({
    verdict: z.enum(['approved', 'rejected']),
    feedback: z.string().max(5000).optional(),
    editedPayload: jsonObject.optional().meta({ description: 'Approves with this payload instead.' }),
  })
  .refine((decision) => decision.editedPayload === undefined || decision.verdict === 'approved', {
    path: ['editedPayload'],
    message: 'editedPayload is only allowed with verdict approved',
  })
  .meta({ id: 'DecisionInput' });
export type DecisionInput = z.output<typeof decisionSchema>;

export const approvalReadQuerySchema = z.object({
  wait: z.coerce
    .number()
    .int()
    .min(1)
    .max(30)
    .optional()
    .meta({ description: 'Seconds to hold the request while the approval is pending.' }),
});

export const approvalIdParamsSchema = z.object({ id: z.uuid() });

export const approvalViewSchema = z
  .object({
    id: z.uuid(),
    status: z.enum(['pending', 'approved', 'rejected', 'expired', 'escalated']),
    action: z.string(),
    payload: jsonObject,
    context: jsonObject.optional(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime().nullable(),
    feedback: z.string().nullable(),
    escalatedTo: z.uuid().optional(),
    escalatedFrom: z.uuid().optional(),
  })
  .meta({ id: 'ApprovalRequestView' });
export type ApprovalView = z.output<typeof approvalViewSchema>;
