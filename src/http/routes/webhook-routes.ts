import {
  webhookCreateSchema,
  webhookDeliveriesQuerySchema,
  webhookDeliveryListSchema,
  webhookDeliveryParamsSchema,
  webhookDeliveryViewSchema,
  webhookEndpointListSchema,
  webhookEndpointViewSchema,
  webhookEndpointWithSecretSchema,
  webhookIdParamsSchema,
  webhookUpdateSchema,
} from '../../modules/webhooks/webhook-schemas.js';
import type { WebhookService } from '../../modules/webhooks/webhook-service.js';
import { problemSchema } from '../problem-schema.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';
import { ORG_LIMITS } from '../../modules/orgs/org-limits.js';

export function webhookRoutes(webhooks: WebhookService) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/webhooks',
      summary: 'Register a webhook endpoint; its signing secret is shown only in this response',
      scope: 'webhooks:write',
      body: webhookCreateSchema,
      responses: {
        201: { description: 'The endpoint, with its secret.', schema: webhookEndpointWithSecretSchema },
        ...problemResponses(401, 403, 422),
        409: {
          description: `The organization has ${ORG_LIMITS.webhookEndpoints} endpoints already (\`limit_reached\`, with \`limit\`).`,
          schema: problemSchema,
        },
      },
      handler: async ({ tenant, body }) => ({ status: 201, body: await webhooks.create(tenant, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks',
      summary: 'List webhook endpoints',
      scope: 'webhooks:read',
      responses: {
        200: { description: 'All endpoints of the organization, oldest first, without secrets.', schema: webhookEndpointListSchema },
        ...problemResponses(401, 403),
      },
      handler: async ({ tenant }) => ({ status: 200, body: { endpoints: await webhooks.list(tenant) } }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/:id',
      summary: 'Read a webhook endpoint',
      scope: 'webhooks:read',
      params: webhookIdParamsSchema,
      responses: {
        200: { description: 'The endpoint, without its secret.', schema: webhookEndpointViewSchema },
        ...problemResponses(401, 403, 404),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await webhooks.get(tenant, params.id) }),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/webhooks/:id',
      summary: 'Change the URL, events or enabled flag of a webhook endpoint',
      scope: 'webhooks:write',
      params: webhookIdParamsSchema,
      body: webhookUpdateSchema,
      responses: {
        200: { description: 'The changed endpoint, without its secret.', schema: webhookEndpointViewSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, body }) => ({ status: 200, body: await webhooks.update(tenant, params.id, body) }),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/webhooks/:id',
      summary: 'Delete a webhook endpoint and its deliveries',
      scope: 'webhooks:write',
      params: webhookIdParamsSchema,
      responses: {
        204: { description: 'Deleted.' },
        ...problemResponses(401, 403, 404),
      },
      handler: async ({ tenant, params }) => {
        await webhooks.delete(tenant, params.id);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/:id/rotate-secret',
      summary: 'Replace the signing secret; the old one keeps signing alongside for 24 hours',
      scope: 'webhooks:write',
      params: webhookIdParamsSchema,
      responses: {
        200: { description: 'The endpoint, with its new secret.', schema: webhookEndpointWithSecretSchema },
        ...problemResponses(401, 403, 404),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await webhooks.rotateSecret(tenant, params.id) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/:id/deliveries',
      summary: 'Recent deliveries to a webhook endpoint, with their attempts',
      scope: 'webhooks:read',
      params: webhookIdParamsSchema,
      query: webhookDeliveriesQuerySchema,
      responses: {
        200: { description: 'Deliveries, newest first.', schema: webhookDeliveryListSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, query }) => ({
        status: 200,
        body: { deliveries: await webhooks.listDeliveries(tenant, params.id, query.limit) },
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/:id/deliveries/:deliveryId/redeliver',
      summary: 'Send a delivery again now, whatever its state',
      scope: 'webhooks:write',
      params: webhookDeliveryParamsSchema,
      responses: {
        202: { description: 'The delivery, pending and due now.', schema: webhookDeliveryViewSchema },
        ...problemResponses(401, 403, 404),
        409: { description: 'The endpoint is disabled.', schema: problemSchema },
      },
      handler: async ({ tenant, params }) => ({
        status: 202,
        body: await webhooks.redeliver(tenant, params.id, params.deliveryId),
      }),
    }),
  ];
}
