import type { Redis, Result } from 'ioredis';

/**
 * A per-endpoint limit on attempts in flight, shared by every worker process, so that one slow
 * or hanging endpoint holds at most `limit` of the delivery slots and other endpoints keep moving.
 * Holders are kept in a sorted set scored by their expiry, so a worker that dies mid-attempt
 * frees its slot when the hold lapses instead of leaking it forever.
 */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** ACQUIRE above, sent once and then run by its SHA (ioredis' `defineCommand`). */
    acquireEndpointSlot(
      key: string,
      now: number,
      expiresAt: number,
      limit: number,
      holder: string,
      holdMs: number,
    ): Result<number, Context>;
  }
}

export class EndpointSlots {
  /** Attempts of this process waiting for a slot of an endpoint, oldest first, woken by its releases. */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly holdMs: number,
  ) {
    redis.defineCommand('acquireEndpointSlot', { numberOfKeys: 1, lua: ACQUIRE });
  }

  private key(endpointId: string): string {
    return `${this.prefix}:endpoint-slots:${endpointId}`;
  }

  async acquire(endpointId: string, holder: string): Promise<boolean> {
    const now = Date.now();
    const acquired = await this.redis.acquireEndpointSlot(this.key(endpointId), now, now + this.holdMs, this.limit, holder, this.holdMs);
    return acquired === 1;
  }

  /**
   * Takes a slot, waiting up to `maxWaitMs` for one: a slot of a busy but healthy endpoint frees
   * within milliseconds, and when this process frees it the oldest waiter here tries at once
   * (Redis still decides, so other processes compete fairly and the limit holds across them).
   */
  async acquireWithin(endpointId: string, holder: string, maxWaitMs: number): Promise<boolean> {
    // Slots freed by other processes, or by a lapsed hold, wake nobody here: look again meanwhile.
    const recheckMs = 20;
    const deadline = Date.now() + maxWaitMs;
    while (!(await this.acquire(endpointId, holder))) {
      const remainingMs = deadline - Date.now();
      const queue = this.waiting.get(endpointId) ?? [];
      if (remainingMs <= 0) return false;
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
    }
    return true;
  }

  async release(endpointId: string, holder: string): Promise<void> {
    try {
      await this.redis.zrem(this.key(endpointId), holder);
    } finally {
      this.waiting.get(endpointId)?.[0]?.();
    }
  }
}
