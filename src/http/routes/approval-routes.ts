import type { ApprovalService } from '../../modules/approvals/approval-service.js';
import {
  approvalCreateSchema,
  approvalIdParamsSchema,
  approvalReadQuerySchema,
  approvalViewSchema,
  decisionSchema,
} from '../../modules/approvals/approval-schemas.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

export function approvalRoutes(approvals: ApprovalService) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/approvals',
      summary: 'Create an approval request; the policy is evaluated at once',
      scope: 'approvals:write',
      body: approvalCreateSchema,
      // The body is not validated yet: only a well-formed idempotency key may reach the database.
      precheck: (tenant, rawBody) =>
        approvals.assertCreationAllowed(
          tenant,
          approvalCreateSchema.shape.idempotencyKey.safeParse((rawBody as { idempotencyKey?: unknown } | undefined)?.idempotencyKey).data,
        ),
      responses: {
        200: { description: 'The policy allowed the action: approved at once.', schema: approvalViewSchema },
        201: { description: 'Pending for a human, or an idempotent replay.', schema: approvalViewSchema },
        ...problemResponses(401, 402, 403, 422),
      },
      handler: async ({ tenant, body }) => {
        const { created, approval } = await approvals.create(tenant, body);
        return { status: created && approval.status === 'approved' ? 200 : 201, body: approval };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/approvals/:id',
      summary: 'Read an approval, optionally waiting while it is pending',
      scope: 'approvals:read',
      params: approvalIdParamsSchema,
      query: approvalReadQuerySchema,
      responses: {
        200: { description: 'The approval as it is now.', schema: approvalViewSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, query, signal }) => ({
        status: 200,
        body: await approvals.get(tenant, params.id, query.wait, signal),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/approvals/:id/decision',
      summary: 'Approve or reject a pending approval',
      scope: 'approvals:decide',
      params: approvalIdParamsSchema,
      body: decisionSchema,
      responses: {
        200: { description: 'The decided approval.', schema: approvalViewSchema },
        ...problemResponses(401, 403, 404, 409, 422),
      },
      handler: async ({ tenant, params, body }) => ({
        status: 200,
        body: await approvals.decide(tenant, params.id, body),
      }),
    }),
  ];
}
