import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../audit/audit-events.js';
import { parseWebhookUrl, UnsafeWebhookUrlError } from './webhook-url-guard.js';

/** The URL's form only; where its host resolves is checked by the service, which may need DNS. */
const webhookUrlSchema = z
  .string()
  .max(2048)
  .superRefine((value, ctx) => {
    try {
      parseWebhookUrl(value);
    } catch (error) {
      if (!(error instanceof UnsafeWebhookUrlError)) throw error;
      ctx.addIssue({ code: 'custom', message: `url ${error.message}` });
    }
  })
  .meta({ description: 'Absolute http or https URL that deliveries are POSTed to.' });

const webhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES);

const webhookEventsSchema = z
  .array(webhookEventTypeSchema)
  .min(1)
  .superRefine((events, ctx) => {
    events.forEach((event, index) => {
      if (events.indexOf(event) !== index)
        ctx.addIssue({ code: 'custom', path: [index], message: `events lists '${event}' more than once` });
    });
  })
  .meta({ description: 'Subscribed event types, at least one, no duplicates.' });

// Unknown fields are refused, as in policy documents: a misspelt `enabled` would otherwise do nothing.
export const webhookCreateSchema = z
  .object({ url: webhookUrlSchema, events: webhookEventsSchema })
  .strict()
  .meta({ id: 'WebhookEndpointCreateInput' });
export type WebhookCreateInput = z.output<typeof webhookCreateSchema>;

export const webhookUpdateSchema = z
  .object({ url: webhookUrlSchema.optional(), events: webhookEventsSchema.optional(), enabled: z.boolean().optional() })
  .strict()
  .refine((patch) => Object.keys(patch).length > 0, { message: 'body must set at least one of url, events or enabled' })
  .meta({ id: 'WebhookEndpointUpdateInput' });
export type WebhookUpdateInput = z.output<typeof webhookUpdateSchema>;

export const webhookEndpointViewSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(webhookEventTypeSchema),
    enabled: z.boolean(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpointView = z.output<typeof webhookEndpointViewSchema>;

export const webhookEndpointWithSecretSchema = webhookEndpointViewSchema
  .extend({ secret: z.string().meta({ description: 'Signing secret; shown only here, it cannot be read back.' }) })
  .meta({ id: 'WebhookEndpointWithSecret' });
export type WebhookEndpointWithSecret = z.output<typeof webhookEndpointWithSecretSchema>;

export const webhookEndpointListSchema = z.object({ endpoints: z.array(webhookEndpointViewSchema) }).meta({ id: 'WebhookEndpointList' });

export const webhookIdParamsSchema = z.object({ id: z.uuid() });

export const webhookDeliveryParamsSchema = z.object({ id: z.uuid(), deliveryId: z.uuid() });

export const webhookDeliveriesQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50).meta({ description: 'How many deliveries, newest first.' }),
});

export const webhookDeliveryViewSchema = z
  .object({
    id: z.uuid().meta({ description: 'The `x-service-webhook-id` of every attempt.' }),
    eventId: z.uuid(),
    eventType: webhookEventTypeSchema,
    status: z.enum(['pending', 'succeeded', 'failed']),
    attemptCount: z.number().int(),
    nextAttemptAt: z.iso.datetime().nullable(),
    createdAt: z.iso.datetime(),
    completedAt: z.iso.datetime().nullable(),
    attempts: z
      .array(
        z.object({
          attemptedAt: z.iso.datetime(),
          statusCode: z.number().int().nullable().meta({ description: 'Null when no response came (timeout, refused).' }),
          durationMs: z.number().int(),
          error: z.string().nullable(),
          responseBody: z.string().nullable().meta({ description: 'The first 20 KB of the response body.' }),
        }),
      )
      .meta({ description: 'Oldest first.' }),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDeliveryView = z.output<typeof webhookDeliveryViewSchema>;

export const webhookDeliveryListSchema = z.object({ deliveries: z.array(webhookDeliveryViewSchema) }).meta({ id: 'WebhookDeliveryList' });
