import { z } from 'zod';
import { formatCount } from '../../lib/display-count.js';
import type { PolicyService } from '../../modules/policies/policy-service.js';
import {
  policyDocumentSchema,
  policyEvaluationInputSchema,
  policyEvaluationSchema,
  policyKeyParamsSchema,
  policyListQuerySchema,
  policyListSchema,
  policyReadQuerySchema,
  policyReplayInputSchema,
  policyReplaySchema,
  policyVersionListQuerySchema,
  policyVersionListSchema,
  policyVersionViewSchema,
  policyViewSchema,
  shadowSummarySchema,
} from '../../modules/policies/policy-schemas.js';
import { ORG_LIMITS } from '../../modules/orgs/org-limits.js';
import { problemSchema } from '../problem-schema.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

export function policyRoutes(policies: PolicyService) {
  return [
    defineRoute({
      method: 'put',
      path: '/v1/policies/:key',
      summary: 'Create or replace a policy; every rule is compiled first and escalateTo must name an existing policy',
      scope: 'policies:write',
      params: policyKeyParamsSchema,
      invalidParams: 'validation_failed',
      body: policyDocumentSchema,
      responses: {
        200: { description: 'The stored policy.', schema: policyViewSchema },
        ...problemResponses(401, 403, 422),
        409: {
          description: `A new policy, and the organization has ${formatCount(ORG_LIMITS.policies)} already (\`limit_reached\`, with \`limit\`).`,
          schema: problemSchema,
        },
      },
      handler: async ({ tenant, params, body }) => ({ status: 200, body: await policies.put(tenant, params.key, body) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/policies/:key/evaluate',
      summary: 'Try a request against the stored policy, or against a draft, without creating anything',
      scope: 'policies:read',
      params: policyKeyParamsSchema,
      invalidParams: 'validation_failed',
      body: policyEvaluationInputSchema,
      responses: {
        200: { description: 'What the policy would decide.', schema: policyEvaluationSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, body }) => ({ status: 200, body: await policies.evaluate(tenant, params.key, body) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/policies/:key/replay',
      summary: "Replay a draft, or the current version, against the key's stored requests, without creating anything",
      scope: 'policies:read',
      params: policyKeyParamsSchema,
      invalidParams: 'validation_failed',
      body: policyReplayInputSchema,
      responses: {
        200: { description: 'What would have changed: counts by change, and examples.', schema: policyReplaySchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, body }) => ({ status: 200, body: await policies.replay(tenant, params.key, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/policies',
      summary: 'List policies by key, with cursor paging',
      scope: 'policies:read',
      query: policyListQuerySchema,
      responses: {
        200: {
          description: "A page of the organization's policies, by key; `nextCursor` is null on the last page.",
          schema: policyListSchema,
        },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, query }) => ({ status: 200, body: await policies.list(tenant, query) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/policies/:key',
      summary: 'Read a policy, or one of its versions',
      scope: 'policies:read',
      params: policyKeyParamsSchema,
      query: policyReadQuerySchema,
      responses: {
        200: {
          description: 'The policy; with `version`, that version and who stored it.',
          schema: z.union([policyViewSchema, policyVersionViewSchema]),
        },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, query }) => ({ status: 200, body: await policies.get(tenant, params.key, query) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/policies/:key/shadow',
      summary: "How the policy's shadow compares with it, for the requests created since the shadow was set",
      scope: 'policies:read',
      params: policyKeyParamsSchema,
      responses: {
        200: {
          description:
            'Requests the shadow evaluated, how many it agreed on, and the disagreements by pair, each with its newest requests.',
          schema: shadowSummarySchema,
        },
        ...problemResponses(401, 403, 404),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await policies.shadowSummary(tenant, params.key) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/policies/:key/versions',
      summary: "A policy's versions, newest first, with cursor paging; kept after a DELETE",
      scope: 'policies:read',
      params: policyKeyParamsSchema,
      query: policyVersionListQuerySchema,
      responses: {
        200: { description: 'A page of versions; `nextCursor` is null on the last page.', schema: policyVersionListSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, query }) => ({ status: 200, body: await policies.versions(tenant, params.key, query) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/policies/:key',
      summary: 'Delete a policy; pending approvals keep the timeout they got',
      scope: 'policies:write',
      params: policyKeyParamsSchema,
      responses: {
        204: { description: 'Deleted.' },
        ...problemResponses(401, 403, 404),
        409: { description: "Another policy's escalateTo names this one; `detail` says which.", schema: problemSchema },
      },
      handler: async ({ tenant, params }) => {
        await policies.delete(tenant, params.key);
        return { status: 204 };
      },
    }),
  ];
}
