import { DelayedError, type Job } from 'bullmq';
import type { DeliveryService } from '../src/modules/webhooks/delivery-service.js';
import { webhookDeliveryJob } from '../src/queues/job-definitions.js';

/** Makes one signed delivery attempt; the service schedules the next one if it fails. */
export function createWebhookDeliveryProcessor(deliveries: DeliveryService) {
  return async (job: Job, token?: string) => {
    const { deliveryId, attempt } = webhookDeliveryJob.payload.parse(job.data);
    const outcome = await deliveries.attempt(deliveryId, attempt, `${job.id}:${token ?? ''}`);
    if (outcome === 'busy') {
      // The endpoint has its share of attempts in flight: step aside so other endpoints go first.
      await job.moveToDelayed(Date.now() + 50 + Math.round(Math.random() * 200), token);
      throw new DelayedError();
    }
    return outcome;
  };
}
