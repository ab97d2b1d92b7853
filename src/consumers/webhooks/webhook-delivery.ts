import { createHash } from 'node:crypto';
import { DelayedError } from 'bullmq';
import { z } from 'zod';
import { defineJob } from '../../jobs/job.js';
import { WEBHOOK_EVENT_TYPES } from '../../modules/audit/audit-events.js';
import { slotHolder, type DeliveryAttempt } from '../../modules/webhooks/delivery-service.js';
import type { EventConsumer } from '../consumer.js';

/** The first attempts of many deliveries, fresh from the fan-out. */
export interface FirstAttemptsPayload {
  firstAttempts: string[];
}

export type WebhookDeliveryPayload = DeliveryAttempt | FirstAttemptsPayload;

/**
 * Webhook attempts. A retry is a job of its own, the attempt number in its id, so a sweeper can
 * re-create a lost one safely; first attempts come many to a job (a BullMQ job costs more than the
 * attempt itself), its id derived from the deliveries it holds, so a relay that plans the same
 * events again enqueues nothing twice. The retry schedule of docs/webhooks.md lives on the delivery
 * row, and `attempts` here only covers our own failures (database away), not the receiver's.
 */
export const webhookDeliveryJob = defineJob<WebhookDeliveryPayload>({
  queue: 'webhook-delivery',
  payload: z.union([
    z.object({ deliveryId: z.uuid(), attempt: z.number().int().min(1) }),
    z.object({ firstAttempts: z.array(z.uuid()).min(1) }),
  ]),
  options: {
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    concurrency: (config) => config.WEBHOOK_DELIVERY_CONCURRENCY,
  },
  jobId: (payload) =>
    'firstAttempts' in payload
      ? `first-attempts-${createHash('sha256').update(payload.firstAttempts.join(',')).digest('base64url')}`
      : `${payload.deliveryId}-${payload.attempt}`,
});

/**
 * Webhooks as a consumer: an event becomes one delivery row per subscribed, enabled endpoint of
 * its organization. Those rows are this consumer's durable work (they also carry the retry
 * schedule and the attempt log), so planning is the fan-out itself. Their first attempts go out
 * as jobs of up to WEBHOOK_DELIVERY_CONCURRENCY deliveries (a worker's attempts at once), taken
 * from the fan-out in its turns across endpoints, so each job spreads over the endpoints too.
 */
export const webhookConsumer: EventConsumer<WebhookDeliveryPayload> = {
  name: 'webhooks',
  events: WEBHOOK_EVENT_TYPES,
  job: webhookDeliveryJob,
  async plan(events, { deliveries, config }) {
    const pending = await deliveries.fanOut(events.map((event) => event.id));
    const perJob = config.WEBHOOK_DELIVERY_CONCURRENCY;
    const jobs: WebhookDeliveryPayload[] = [];
    for (let start = 0; start < pending.length; start += perJob) {
      const chunk = pending.slice(start, start + perJob);
      jobs.push(chunk.length === 1 ? { deliveryId: chunk[0]!.id, attempt: 1 } : { firstAttempts: chunk.map((delivery) => delivery.id) });
    }
    return jobs;
  },
  processor:
    ({ deliveries }) =>
    async (payload, job, token) => {
      if ('firstAttempts' in payload) return deliveries.attemptFirst(payload.firstAttempts, token);
      const { deliveryId, attempt } = payload;
      const outcome = await deliveries.attempt(deliveryId, attempt, slotHolder(deliveryId, attempt, token));
      if (outcome === 'busy') {
        // The endpoint has its share of attempts in flight: step aside so other endpoints go first.
        await job.moveToDelayed(Date.now() + 50 + Math.round(Math.random() * 200), token);
        throw new DelayedError();
      }
      return outcome;
    },
};
