import {
  pushSettingsSchema,
  pushSubscribedSchema,
  pushSubscriptionInputSchema,
  pushSubscriptionRemovalSchema,
} from '../../modules/push/push-schemas.js';
import type { PushService } from '../../modules/push/push-service.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

/** A member's devices that get Web Push notifications: the console's own, with the member's session. */
export function pushRoutes(push: PushService) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/session/push',
      summary: "The VAPID public key browsers subscribe with, and how many of the member's devices get notifications",
      auth: 'session',
      responses: { 200: { description: 'The settings.', schema: pushSettingsSchema }, ...problemResponses(401, 403) },
      handler: async ({ tenant }) => ({ status: 200, body: await push.settings(tenant) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/session/push-subscriptions',
      summary: 'Turn on notifications on this device: its push subscription, as the browser gave it',
      auth: 'session',
      body: pushSubscriptionInputSchema,
      responses: {
        201: { description: 'The device gets a notification for each request the member may decide.', schema: pushSubscribedSchema },
        ...problemResponses(401, 403, 422, 503),
      },
      handler: async ({ tenant, body }) => {
        const device = await push.subscribe(tenant, body);
        return { status: 201, body: { id: device.id, createdAt: device.createdAt.toISOString() } };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/session/push-subscriptions',
      summary: 'Turn off notifications on this device',
      auth: 'session',
      body: pushSubscriptionRemovalSchema,
      responses: { 204: { description: 'Turned off.' }, ...problemResponses(401, 403, 404, 422) },
      handler: async ({ tenant, body }) => {
        await push.unsubscribe(tenant, body.endpoint);
        return { status: 204 };
      },
    }),
  ];
}
