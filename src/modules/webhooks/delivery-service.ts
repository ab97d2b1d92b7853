import type { Logger } from '../../lib/logger.js';
import { webhookDeliveryJob } from '../../consumers/webhooks/webhook-delivery.js';
import type { JobQueues } from '../../jobs/job-queues.js';
import type { Metrics } from '../../lib/metrics.js';
import type { Actor } from '../audit/audit-events.js';
import { FAILING_ENDPOINT_DISABLE_AFTER_MS, nextAttemptDelay } from './delivery-schedule.js';
import type { AttemptResolution, AttemptTarget, DeliveryStore, PendingDelivery } from './delivery-store.js';
import type { EndpointSlots } from './endpoint-slots.js';
import { sendWebhook, type AttemptResult } from './webhook-sender.js';
import { signDelivery } from './webhook-signing.js';

export type AttemptOutcome = 'skipped' | 'busy' | AttemptResolution['kind'];

export interface DeliveryOptions {
  allowPrivate: boolean;
  backoffScale: number;
  /** How overdue a next attempt must be before the sweeper assumes its job was lost. */
  stalledGraceMs: number;
  timeoutMs?: number;
}

const actor: Actor = { type: 'system', id: 'webhook-delivery' };

/**
 * A slot of a busy but healthy endpoint frees within milliseconds, so an attempt waits this long
 * for one before giving the job back to the queue; an endpoint that stays full (slow or hanging)
 * costs this much per job.
 */
const SLOT_WAIT_MS = 75;

/** Delivers webhooks one attempt at a time, with the retry schedule of contract C5. */
export class DeliveryService {
  constructor(
    private readonly store: DeliveryStore,
    private readonly slots: EndpointSlots,
    private readonly jobs: JobQueues,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    private readonly options: DeliveryOptions,
  ) {}

  /**
   * Creates one delivery per (event, subscribed enabled endpoint) and returns every delivery of
   * these events still waiting for its first attempt, including those an interrupted relay made.
   * They come in turns across endpoints (each endpoint's first, then each one's second, ...): queued
   * in this order, the worker's slots spread over the endpoints instead of filling one endpoint's
   * share and putting the rest of its jobs back.
   */
  fanOut(eventIds: readonly string[]): Promise<PendingDelivery[]> {
    return this.store.fanOut(eventIds);
  }

  /**
   * Makes attempt number `attempt` of a delivery. A stale or repeated job (the delivery moved on,
   * or was deleted with its endpoint) is skipped; 'busy' means the endpoint already has its share
   * of attempts in flight and the caller should try again shortly.
   */
  async attempt(deliveryId: string, attempt: number, holder: string): Promise<AttemptOutcome> {
    const target = await this.store.loadTarget(deliveryId);
    if (!target || target.status !== 'pending' || target.attemptCount !== attempt - 1) return 'skipped';
    if (!target.endpoint.enabled) {
      await this.store.abandon(deliveryId, new Date());
      return 'skipped';
    }
    if (!(await this.slots.acquireWithin(target.endpoint.id, holder, SLOT_WAIT_MS))) return 'busy';

    let result: AttemptResult;
    const attemptedAt = new Date();
    try {
      const { rawBody } = target;
      const headers = signDelivery({ secrets: target.endpoint.secrets, eventId: target.eventId, deliveryId, rawBody });
      result = await sendWebhook({
        url: target.endpoint.url,
        headers: { ...headers },
        body: rawBody,
        allowPrivate: this.options.allowPrivate,
        ...(this.options.timeoutMs ? { timeoutMs: this.options.timeoutMs } : {}),
      });
    } catch (error) {
      await this.slots.release(target.endpoint.id, holder);
      throw error;
    }
    // Freed while the attempt is recorded rather than before, a round trip less on every attempt;
    // a release Redis refuses is only logged, as the hold lapses by itself.
    const released = this.slots.release(target.endpoint.id, holder).catch((error: unknown) => {
      this.logger.warn({ err: error, deliveryId }, 'could not free an endpoint slot; it frees when its hold lapses');
    });

    const resolution = this.resolve(target, attempt, result, attemptedAt);
    const [recorded] = await Promise.all([
      this.store.recordAttempt(
        target,
        {
          attempt,
          attemptedAt,
          durationMs: result.durationMs,
          statusCode: result.statusCode,
          error: result.error,
          responseBody: result.responseBody,
        },
        resolution,
        actor,
      ),
      released,
    ]);
    if (!recorded) return 'skipped';
    this.metrics.webhookAttempts.inc({ result: resolution.kind });
    this.metrics.webhookDuration.observe({ result: resolution.kind }, result.durationMs / 1000);
    await this.afterAttempt(target, attempt, resolution);
    return resolution.kind;
  }

  private resolve(target: AttemptTarget, attempt: number, result: AttemptResult, now: Date): AttemptResolution {
    if (result.ok) return { kind: 'succeeded' };
    if (result.statusCode === 410) return { kind: 'endpoint-disabled', reason: 'The endpoint answered 410 Gone.' };
    const failingSince = target.endpoint.failingSince ?? now;
    if (now.getTime() - failingSince.getTime() >= FAILING_ENDPOINT_DISABLE_AFTER_MS) {
      return { kind: 'endpoint-disabled', reason: `Every delivery has failed since ${failingSince.toISOString()}.` };
    }
    const delay = nextAttemptDelay(attempt, this.options.backoffScale, result.retryAfterMs);
    return delay === null ? { kind: 'failed' } : { kind: 'retry', nextAttemptAt: new Date(now.getTime() + result.durationMs + delay) };
  }

  /**
   * Schedules the next attempt after a committed failure; if Redis refuses, the sweeper finds it
   * from the row. (Disabling an endpoint is an audit event, which the admins' mail consumes.)
   */
  private async afterAttempt(target: AttemptTarget, attempt: number, resolution: AttemptResolution): Promise<void> {
    if (resolution.kind !== 'retry') return;
    try {
      const delayMs = resolution.nextAttemptAt.getTime() - Date.now();
      await this.jobs.add(webhookDeliveryJob, { deliveryId: target.deliveryId, attempt: attempt + 1 }, delayMs);
    } catch (error) {
      this.logger.warn(
        { err: error, deliveryId: target.deliveryId },
        'could not schedule the next attempt of a delivery; the sweeper will',
      );
    }
  }

  /** Runs the next attempt of a delivery now, also when it waits as a delayed retry (redelivery). */
  deliverNow(deliveryId: string, attempt: number): Promise<void> {
    return this.jobs.runNow(webhookDeliveryJob, { deliveryId, attempt });
  }

  /** The sweeper's half: re-enqueues deliveries whose next attempt is overdue (job lost with Redis). */
  async resumeStalled(limit = 500): Promise<number> {
    const stalled = await this.store.findStalled(this.options.stalledGraceMs, limit);
    await Promise.all(stalled.map((delivery) => this.deliverNow(delivery.id, delivery.attemptCount + 1)));
    return stalled.length;
  }
}
