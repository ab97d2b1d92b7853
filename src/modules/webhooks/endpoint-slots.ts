import type { RedisClient } from '../../lib/redis.js';
import { Batcher } from '../../lib/batcher.js';
import { ExpiringSlots } from '../../lib/expiring-slots.js';

interface SlotRequest {
  endpointId: string;
  holder: string;
}

/**
 * A per-endpoint limit on attempts in flight, shared by every worker process, so that one slow
 * or hanging endpoint holds at most `limit` of the delivery slots and other endpoints keep moving.
 * A worker that dies mid-attempt frees its slot when the hold lapses (see ExpiringSlots).
 */
export class EndpointSlots {
  /** Attempts of this process waiting for a slot of an endpoint, oldest first, woken by its releases. */
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Per endpoint that attempts here wait for: how many wait, and when this process last freed one of its slots. */
  private readonly progress = new Map<string, { waiters: number; freedAt: number }>();

  private readonly slots: ExpiringSlots;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    /** Attempts in flight to one endpoint, across every process. */
    readonly limit: number,
    holdMs: number,
  ) {
    this.slots = new ExpiringSlots(redis, limit, holdMs);
  }

  private holds(requests: SlotRequest[]) {
    return requests.map((request) => ({ key: this.key(request.endpointId), holder: request.holder }));
  }

  /** The acquisitions asked for in one turn of the event loop, made in one Redis call. */
  private readonly acquisitions = new Batcher<SlotRequest, boolean>((requests) => this.slots.acquire(this.holds(requests)));

  /** The releases of one turn of the event loop, in one Redis call. */
  private readonly releases = new Batcher<SlotRequest>((requests) => this.slots.release(this.holds(requests)));

  private key(endpointId: string): string {
    return `${this.prefix}:endpoint-slots:${endpointId}`;
  }

  acquire(endpointId: string, holder: string): Promise<boolean> {
    return this.acquisitions.add({ endpointId, holder });
  }

  /**
   * Takes a slot, waiting for one as long as the endpoint's attempts keep finishing: a busy but
   * healthy endpoint frees a slot within milliseconds, and when this process frees one the oldest
   * waiter here tries at once (Redis still decides, so other processes compete fairly and the limit
   * holds across them). It gives up once `stallMs` passes without a slot of the endpoint freed by
   * this process (a slow or hanging endpoint, or one whose slots other processes hold). A fixed
   * wait made the attempts behind a full but healthy endpoint give their jobs back again and again,
   * each time late by the wait and the way back through the queue. Only the first `limit` attempts
   * of this process waiting for one endpoint wait on like that; the others give up after `stallMs`
   * however the endpoint moves: waiting, each holds one of the worker's places, which the other
   * endpoints' deliveries must keep.
   */
  async acquireWithin(endpointId: string, holder: string, stallMs: number): Promise<boolean> {
    if (await this.acquire(endpointId, holder)) return true;
    const progress = this.progress.get(endpointId) ?? { waiters: 0, freedAt: 0 };
    const waitsOn = progress.waiters < this.limit;
    // Slots freed by other processes, or by a lapsed hold, wake nobody here: look again meanwhile.
    const recheckMs = 20;
    const waitingSince = Date.now();
    progress.waiters++;
    this.progress.set(endpointId, progress);
    try {
      do {
        const lastProgress = waitsOn ? Math.max(waitingSince, progress.freedAt) : waitingSince;
        const remainingMs = lastProgress + stallMs - Date.now();
        if (remainingMs <= 0) return false;
        const queue = this.waiting.get(endpointId) ?? [];
        await new Promise<void>((wake) => {
          const timer = setTimeout(done, Math.min(remainingMs, recheckMs));
          function done(): void {
            clearTimeout(timer);
            const at = queue.indexOf(done);
            if (at >= 0) queue.splice(at, 1);
            wake();
          }
          queue.push(done);
          this.waiting.set(endpointId, queue);
        });
        if (queue.length === 0 && this.waiting.get(endpointId) === queue) this.waiting.delete(endpointId);
      } while (!(await this.acquire(endpointId, holder)));
      return true;
    } finally {
      if (--progress.waiters === 0) this.progress.delete(endpointId);
    }
  }

  async release(endpointId: string, holder: string): Promise<void> {
    try {
      await this.releases.add({ endpointId, holder });
    } finally {
      const progress = this.progress.get(endpointId);
      if (progress) progress.freedAt = Date.now();
      this.waiting.get(endpointId)?.[0]?.();
    }
  }
}
