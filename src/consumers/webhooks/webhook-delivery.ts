import { DelayedError } from 'bullmq';
import { z } from 'zod';
import { defineJob } from '../../jobs/job.js';
import { WEBHOOK_EVENT_TYPES } from '../../modules/audit/audit-events.js';
import type { EventConsumer } from '../consumer.js';

export interface DeliveryAttemptPayload {
  deliveryId: string;
  attempt: number;
}

/**
 * One signed attempt of one delivery (an event for one endpoint). Each attempt is its own job,
 * the attempt number in its id, so a sweeper can re-create a lost one safely; the retry schedule
 * of contract C5 lives on the delivery row, and `attempts` here only covers our own failures
 * (database away), not the receiver's.
 */
export const webhookDeliveryJob = defineJob<DeliveryAttemptPayload>({
  queue: 'webhook-delivery',
  payload: z.object({ deliveryId: z.uuid(), attempt: z.number().int().min(1) }),
  options: {
    attempts: 5,
    backoff: { type: 'exponential', delay: 1000 },
    concurrency: (config) => config.WEBHOOK_DELIVERY_CONCURRENCY,
  },
  jobId: ({ deliveryId, attempt }) => `${deliveryId}-${attempt}`,
  processor:
    ({ deliveries }) =>
    async ({ deliveryId, attempt }, job, token) => {
      const outcome = await deliveries.attempt(deliveryId, attempt, `${job.id}:${token ?? ''}`);
      if (outcome === 'busy') {
        // The endpoint has its share of attempts in flight: step aside so other endpoints go first.
        await job.moveToDelayed(Date.now() + 50 + Math.round(Math.random() * 200), token);
        throw new DelayedError();
      }
      return outcome;
    },
});

/**
 * Webhooks as a consumer: an event becomes one delivery row per subscribed, enabled endpoint of
 * its organization. Those rows are this consumer's durable work (they also carry the retry
 * schedule and the attempt log), so planning is the fan-out itself.
 */
export const webhookConsumer: EventConsumer<DeliveryAttemptPayload> = {
  name: 'webhooks',
  events: WEBHOOK_EVENT_TYPES,
  job: webhookDeliveryJob,
  async plan(events, { deliveries }) {
    const pending = await deliveries.fanOut(events.map((event) => event.id));
    return pending.map((delivery) => ({ deliveryId: delivery.id, attempt: delivery.attemptCount + 1 }));
  },
};
