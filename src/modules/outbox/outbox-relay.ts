import type { Logger } from '../../lib/logger.js';
import type { JobProducers } from '../../queues/job-producers.js';
import { withTimeout } from '../../lib/time.js';
import type { ClaimedMessage, OutboxStore, PendingDelivery } from './outbox-store.js';

/** Redis that does not take a batch in this long is treated as down; the rows wait for the next poll. */
const ENQUEUE_TIMEOUT_MS = 5_000;

export interface RelayOptions {
  batchSize: number;
  pollIntervalMs: number;
  leaseMs: number;
}

/**
 * Moves committed webhook events from the Postgres outbox to the queues: one delivery job per
 * subscribed endpoint, and the admin email for orphans. A row is marked relayed only after its
 * jobs are in Redis, so a Redis outage delays webhooks but loses none; job ids are deterministic,
 * so relaying a row twice (after a crash) enqueues nothing twice.
 */
export class OutboxRelay {
  private wake: (() => void) | null = null;
  private signalled = false;

  constructor(
    private readonly store: OutboxStore,
    private readonly jobs: JobProducers,
    private readonly logger: Logger,
    private readonly options: RelayOptions,
  ) {}

  /** Relays one batch; returns how many outbox rows it handled. */
  async relayBatch(): Promise<number> {
    const messages = await this.store.claim(this.options.batchSize, this.options.leaseMs);
    if (messages.length === 0) return 0;
    const ids = messages.map((message) => message.id);
    try {
      const deliveries = await this.store.fanOut(messages.map((message) => message.eventId));
      await withTimeout(this.enqueue(messages, deliveries), ENQUEUE_TIMEOUT_MS, 'enqueueing relayed jobs');
    } catch (error) {
      // Leave the rows to the next poll instead of to the end of the lease.
      await this.store.release(ids);
      throw error;
    }
    await this.store.markRelayed(ids);
    return messages.length;
  }

  private async enqueue(messages: ClaimedMessage[], deliveries: PendingDelivery[]): Promise<void> {
    await Promise.all([
      ...deliveries.map((delivery) => this.jobs.scheduleDelivery(delivery.id, delivery.attemptCount + 1, 0)),
      ...messages
        .filter((message) => message.eventType === 'approval.orphaned')
        .map((message) =>
          this.jobs.sendEmail({
            kind: 'approval-orphaned',
            orgId: message.orgId,
            approvalId: message.approvalId,
            eventId: message.eventId,
          }),
        ),
    ]);
  }

  /** Asks a running relay to look now instead of at its next poll. */
  signal(): void {
    this.signalled = true;
    this.wake?.();
  }

  /** Relays until `stop` aborts: at once when signalled, otherwise every poll interval. */
  async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      try {
        while (!stop.aborted && (await this.relayBatch()) === this.options.batchSize);
      } catch (error) {
        this.logger.error({ err: error }, 'outbox relay failed; retrying at the next poll');
      }
      await this.idle(stop);
    }
  }

  private idle(stop: AbortSignal): Promise<void> {
    if (this.signalled || stop.aborted) {
      this.signalled = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop.removeEventListener('abort', done);
        this.wake = null;
        this.signalled = false;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollIntervalMs);
      stop.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}
