import { apiKeyCreatedSchema, apiKeyCreateSchema, apiKeyIdParamsSchema, apiKeyListSchema } from '../../modules/orgs/key-schemas.js';
import type { OrgService } from '../../modules/orgs/org-service.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

export function keyRoutes(orgs: OrgService) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/keys',
      summary: "List the organization's API keys (never the keys themselves)",
      scope: 'keys:read',
      responses: {
        200: { description: 'Every key, newest first, revoked ones too.', schema: apiKeyListSchema },
        ...problemResponses(401, 403),
      },
      handler: async ({ tenant }) => ({ status: 200, body: { keys: await orgs.listApiKeys(tenant) } }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/keys',
      summary: 'Create an API key with some of your own scopes; the key is shown once',
      scope: 'keys:write',
      body: apiKeyCreateSchema,
      responses: {
        201: { description: 'The key, and its secret this once.', schema: apiKeyCreatedSchema },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, body }) => ({ status: 201, body: await orgs.createApiKeyFor(tenant, body) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/keys/:id',
      summary: 'Revoke an API key: it stops working at once',
      scope: 'keys:write',
      params: apiKeyIdParamsSchema,
      responses: { 204: { description: 'Revoked.' }, ...problemResponses(401, 403, 404) },
      handler: async ({ tenant, params }) => {
        await orgs.revokeApiKeyOf(tenant, params.id);
        return { status: 204 };
      },
    }),
  ];
}
