import type { Logger } from '../../lib/logger.js';
import type { Metrics } from '../../lib/metrics.js';
import { Semaphore } from '../../lib/semaphore.js';
import type { Actor } from '../audit/audit-events.js';
import { FAILING_ENDPOINT_DISABLE_AFTER_MS, nextAttemptDelay } from './delivery-schedule.js';
import type { AttemptResolution, AttemptTarget, DeliveryStore, PendingDelivery } from './delivery-store.js';
import type { EndpointSlots } from './endpoint-slots.js';
import { sendWebhook, type AttemptResult } from './webhook-sender.js';
import type { WebhookSecrets } from './webhook-secrets.js';
import { sealWebhookReceipt, type ReceiptKeys } from '../audit/receipt-signing.js';
import { signDelivery } from './webhook-signing.js';

/** One attempt of one delivery: a retry, a redelivery, a sweep, or a first attempt on its own. */
export interface DeliveryAttempt {
  deliveryId: string;
  attempt: number;
}

/**
 * Where attempts wait for a worker (the webhook-delivery queue). `rerun` queues an attempt whose id
 * may have been used before: a redelivery, a sweep, a first attempt that stepped aside.
 */
export interface AttemptQueue {
  add(attempt: DeliveryAttempt, delayMs?: number): Promise<void>;
  rerun(attempt: DeliveryAttempt, delayMs?: number): Promise<void>;
}

export type AttemptOutcome = 'skipped' | 'busy' | AttemptResolution['kind'];

export interface DeliveryOptions {
  allowPrivate: boolean;
  /** Attempts this process runs at once, whether each is a job of its own or one of a job's first attempts. */
  concurrency: number;
  backoffScale: number;
  /** How overdue a next attempt must be before the sweeper assumes its job was lost. */
  stalledGraceMs: number;
  /** Opens the endpoints' stored secrets to sign with. */
  secrets: WebhookSecrets;
  /** Signs the receipts of settling events as they are delivered (sealWebhookReceipt). */
  receipts: ReceiptKeys;
  timeoutMs?: number;
}

const actor: Actor = { type: 'system', id: 'webhook-delivery' };

/**
 * A slot of a busy but healthy endpoint frees within milliseconds, so an attempt waits for one as
 * long as the endpoint's slots keep being freed, and gives the job back to the queue once this long
 * passes without one; an endpoint that stays full (slow or hanging) costs this much per job.
 */
const SLOT_STALL_MS = 250;

/**
 * How long the first attempts of a job waiting for their turn at an endpoint wait without any of its
 * attempts finishing before they step aside: longer than a healthy endpoint's answer and its
 * recording, far shorter than a hanging one's deadline.
 */
const TURN_STALL_MS = 1_000;

/** How long a first attempt that found its endpoint full, or failed on our side, waits as a job of its own. */
const STEP_ASIDE_MS = { busy: 50, error: 1000 };

/**
 * The first attempts of one job to one endpoint take turns, at most the endpoint's limit at once.
 * Raced together, those that found no slot within a short wait stepped aside as delayed jobs of
 * their own, again and again, each time a quarter of a second late, even to an endpoint answering
 * in milliseconds. A delivery waits for its turn as long as the endpoint's attempts keep finishing;
 * once none has finished for `stallMs` (a slow or hanging endpoint), the waiting ones step aside
 * as before, so one slow endpoint never holds the job's others back.
 */
class EndpointTurns {
  private running = 0;
  private readonly waiting: ((turn: boolean) => void)[] = [];
  private stall: NodeJS.Timeout | undefined;

  constructor(
    private readonly limit: number,
    private readonly stallMs: number,
  ) {}

  /** Resolves true when it is this attempt's turn, false when the endpoint stalled meanwhile. */
  take(): Promise<boolean> {
    if (this.running < this.limit) {
      this.running++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.stall ??= this.watchForStall();
    });
  }

  /** An attempt that had its turn finished: the next waiting one goes. */
  done(): void {
    clearTimeout(this.stall);
    this.stall = undefined;
    const next = this.waiting.shift();
    if (!next) {
      this.running--;
      return;
    }
    next(true);
    if (this.waiting.length > 0) this.stall = this.watchForStall();
  }

  private watchForStall(): NodeJS.Timeout {
    return setTimeout(() => {
      this.stall = undefined;
      for (const giveUp of this.waiting.splice(0)) giveUp(false);
    }, this.stallMs);
  }
}

/** What became of the first attempts of one job. */
export type FirstAttemptsOutcome = Partial<Record<AttemptOutcome | 'requeued', number>>;

/** The holder of an attempt's endpoint slot: the attempt, and the run of the job that makes it. */
export const slotHolder = (deliveryId: string, attempt: number, token: string | undefined) => `${deliveryId}-${attempt}:${token ?? ''}`;

/** Delivers webhooks one attempt at a time, with the retry schedule of docs/webhooks.md. */
export class DeliveryService {
  private readonly attempts: Semaphore;

  constructor(
    private readonly store: DeliveryStore,
    private readonly slots: EndpointSlots,
    private readonly queue: AttemptQueue,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    private readonly options: DeliveryOptions,
  ) {
    this.attempts = new Semaphore(options.concurrency);
  }

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
  attempt(deliveryId: string, attempt: number, holder: string): Promise<AttemptOutcome> {
    return this.attempts.run(async () => this.attemptTarget(deliveryId, await this.store.loadTarget(deliveryId), attempt, holder));
  }

  /**
   * The first attempts of many deliveries, as one job: their rows read in one statement, the
   * attempts made side by side, each recorded and retried on its own. One whose endpoint stays
   * full, or that fails on our side (database away), becomes a job of its own (`<id>-1`, the id the
   * sweeper would give it), so one slow endpoint or one error never holds the others back. Run again
   * (a worker died), deliveries already recorded are skipped.
   */
  async attemptFirst(deliveryIds: readonly string[], token: string | undefined): Promise<FirstAttemptsOutcome> {
    const targets = await this.store.loadTargets(deliveryIds);
    const turns = new Map<string, EndpointTurns>();
    const turnsOf = (endpointId: string) => {
      let endpointTurns = turns.get(endpointId);
      if (!endpointTurns) turns.set(endpointId, (endpointTurns = new EndpointTurns(this.slots.limit, TURN_STALL_MS)));
      return endpointTurns;
    };
    const settled = await Promise.allSettled(
      deliveryIds.map(async (deliveryId, index): Promise<AttemptOutcome | 'requeued'> => {
        const target = targets[index]!;
        const endpointTurns = target ? turnsOf(target.endpoint.id) : null;
        if (endpointTurns && !(await endpointTurns.take())) {
          await this.stepAside(deliveryId, STEP_ASIDE_MS.busy);
          return 'requeued';
        }
        let outcome: AttemptOutcome;
        try {
          outcome = await this.attempts.run(() => this.attemptTarget(deliveryId, target, 1, slotHolder(deliveryId, 1, token)));
        } catch (error) {
          this.logger.warn({ err: error, deliveryId }, 'a first attempt failed on our side; it is retried as a job of its own');
          await this.stepAside(deliveryId, STEP_ASIDE_MS.error);
          return 'requeued';
        } finally {
          endpointTurns?.done();
        }
        if (outcome !== 'busy') return outcome;
        await this.stepAside(deliveryId, STEP_ASIDE_MS.busy);
        return 'requeued';
      }),
    );
    const outcomes: FirstAttemptsOutcome = {};
    for (const result of settled) {
      // Only a delivery that could not even be queued again fails the job, whose next run retries it.
      if (result.status === 'rejected') throw result.reason;
      outcomes[result.value] = (outcomes[result.value] ?? 0) + 1;
    }
    return outcomes;
  }

  private stepAside(deliveryId: string, delayMs: number): Promise<void> {
    return this.queue.rerun({ deliveryId, attempt: 1 }, delayMs + Math.round(Math.random() * 200));
  }

  private async attemptTarget(deliveryId: string, target: AttemptTarget | null, attempt: number, holder: string): Promise<AttemptOutcome> {
    if (!target || target.status !== 'pending' || target.attemptCount !== attempt - 1) return 'skipped';
    if (!target.endpoint.enabled) {
      await this.store.abandon(deliveryId, new Date());
      return 'skipped';
    }
    if (!(await this.slots.acquireWithin(target.endpoint.id, holder, SLOT_STALL_MS))) return 'busy';

    let result: AttemptResult;
    const attemptedAt = new Date();
    try {
      const rawBody = sealWebhookReceipt(target.rawBody, target.orgId, target.auditSeq, await this.options.receipts.receiptSigner());
      const endpoint = { orgId: target.orgId, endpointId: target.endpoint.id };
      const secrets = target.endpoint.storedSecrets.map((stored) => this.options.secrets.fromStored(endpoint, stored));
      const headers = signDelivery({ secrets, eventId: target.eventId, deliveryId, rawBody });
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
      await this.queue.add({ deliveryId: target.deliveryId, attempt: attempt + 1 }, delayMs);
    } catch (error) {
      this.logger.warn(
        { err: error, deliveryId: target.deliveryId },
        'could not schedule the next attempt of a delivery; the sweeper will',
      );
    }
  }

  /** Runs the next attempt of a delivery now, also when it waits as a delayed retry (redelivery). */
  deliverNow(deliveryId: string, attempt: number): Promise<void> {
    return this.queue.rerun({ deliveryId, attempt });
  }

  /** The sweeper's half: re-enqueues deliveries whose next attempt is overdue (job lost with Redis). */
  async resumeStalled(limit = 500): Promise<number> {
    const stalled = await this.store.findStalled(this.options.stalledGraceMs, limit);
    await Promise.all(stalled.map((delivery) => this.deliverNow(delivery.id, delivery.attemptCount + 1)));
    return stalled.length;
  }
}
