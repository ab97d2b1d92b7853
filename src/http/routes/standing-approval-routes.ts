import type { ApprovalService } from '../../modules/approvals/approval-service.js';
import {
  standingApprovalIdParamsSchema,
  standingApprovalListQuerySchema,
  standingApprovalListSchema,
  standingApprovalViewSchema,
} from '../../modules/approvals/standing-approval-schemas.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

/** Standing approvals (docs/policies.md#standing-approvals): granted with a decision, listed and revoked here. */
export function standingApprovalRoutes(approvals: ApprovalService) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/standing-approvals',
      summary: "List the organization's standing approvals, newest first",
      scope: 'approvals:read',
      query: standingApprovalListQuerySchema,
      responses: {
        200: { description: 'Standing approvals, active or not as asked.', schema: standingApprovalListSchema },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, query }) => ({
        status: 200,
        body: { standingApprovals: await approvals.listStanding(tenant, query.active, query.limit) },
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/standing-approvals/:id/revoke',
      summary: 'Revoke a standing approval: no request is approved by it afterwards',
      scope: 'approvals:decide',
      params: standingApprovalIdParamsSchema,
      responses: {
        200: { description: 'Revoked.', schema: standingApprovalViewSchema },
        ...problemResponses(401, 403, 404, 409, 422),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await approvals.revokeStanding(tenant, params.id) }),
    }),
  ];
}
