import { eventsFor } from '../src/consumers/consumer.js';
import { ENQUEUE_BATCH_TIMEOUT_MS } from '../src/jobs/job-queues.js';
import { FailureRunLog } from '../src/lib/failure-run-log.js';
import { withTimeout } from '../src/lib/time.js';
import type { Services } from '../src/services.js';
import type { DomainEvent } from '../src/modules/outbox/domain-events.js';

export interface RelayOptions {
  batchSize: number;
  pollIntervalMs: number;
  leaseMs: number;
  /**
   * Passes one relay runs at once. A commit signalled while a pass hands its batch over starts
   * another pass at once (rows are claimed with SKIP LOCKED, so passes take disjoint rows, as the
   * relays of several workers do) instead of waiting for the end of that pass and a look after it.
   */
  passesInFlight: number;
}

/**
 * Moves committed domain events from the Postgres outbox to their consumers: each consumer
 * subscribed to an event writes its durable work (its `plan`) and gets its jobs. A row is marked
 * relayed only after those jobs are in Redis, so a Redis outage delays work but loses none; job
 * ids are deterministic and plans idempotent, so relaying a row twice (after a crash) enqueues
 * nothing twice.
 */
export class OutboxRelay {
  private wake: (() => void) | null = null;
  private signalled = false;

  constructor(
    private readonly services: Services,
    private readonly options: RelayOptions,
  ) {}

  private get store() {
    return this.services.outbox;
  }

  /** Relays one batch; returns how many outbox rows it handled. */
  async relayBatch(): Promise<number> {
    const claimed = await this.store.claim(this.options.batchSize, this.options.leaseMs);
    if (claimed.length === 0) return 0;
    const ids = claimed.map((message) => message.id);
    try {
      const events = claimed.map((message) => message.event);
      await withTimeout(this.handOver(events), ENQUEUE_BATCH_TIMEOUT_MS, 'enqueueing relayed jobs');
    } catch (error) {
      // Leave the rows to the next poll instead of to the end of the lease.
      await this.store.release(ids);
      throw error;
    }
    await this.store.markRelayed(ids);
    return claimed.length;
  }

  private async handOver(events: readonly DomainEvent[]): Promise<void> {
    await Promise.all(
      this.services.consumers.map(async (consumer) => {
        const subscribed = eventsFor(consumer, events, this.services.config);
        if (subscribed.length === 0) return;
        const payloads = await consumer.plan(subscribed, this.services);
        const { job } = consumer;
        if (job) await Promise.all(payloads.map((payload) => this.services.jobs.add(job, payload)));
      }),
    );
  }

  /** Asks a running relay to look now instead of at its next poll. */
  signal(): void {
    this.signalled = true;
    this.wake?.();
  }

  /** Relays until `stop` aborts: at once when signalled, otherwise every poll interval. */
  async run(stop: AbortSignal): Promise<void> {
    const failures = new FailureRunLog(this.services.logger, 'outbox relay', 'retrying at the next poll');
    const passes = new Set<Promise<void>>();
    const startPass = () => {
      const pass = (async () => {
        try {
          while (!stop.aborted && (await this.relayBatch()) === this.options.batchSize);
          failures.succeeded();
        } catch (error) {
          failures.failed(error);
        }
      })().finally(() => passes.delete(pass));
      passes.add(pass);
    };
    while (!stop.aborted) {
      startPass();
      await this.idle(stop);
      while (passes.size >= this.options.passesInFlight && !stop.aborted) await Promise.race(passes);
    }
    await Promise.all(passes);
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
