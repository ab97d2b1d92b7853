import type { Redis, Result } from 'ioredis';
import { Batcher } from '../../lib/batcher.js';

/**
 * A per-endpoint limit on attempts in flight, shared by every worker process, so that one slow
 * or hanging endpoint holds at most `limit` of the delivery slots and other endpoints keep moving.
 * Holders are kept in a sorted set scored by their expiry, so a worker that dies mid-attempt
 * frees its slot when the hold lapses instead of leaking it forever.
 */
const ACQUIRE = `
local acquired = {}
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[1])
  if redis.call('ZCARD', key) < tonumber(ARGV[3]) then
    redis.call('ZADD', key, ARGV[2], ARGV[4 + i])
    redis.call('PEXPIRE', key, ARGV[4])
    acquired[i] = 1
  else
    acquired[i] = 0
  end
end
return acquired`;

const RELEASE = `
for i, key in ipairs(KEYS) do redis.call('ZREM', key, ARGV[i]) end
return #KEYS`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /**
     * ACQUIRE above for many (endpoint key, holder) pairs at once: keys, then now, expiresAt,
     * limit, holdMs and one holder per key; one 0 or 1 per key. Sent once, then run by its SHA.
     */
    acquireEndpointSlots(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Result<number[], Context>;
    /** RELEASE above: keys, then one holder per key. */
    releaseEndpointSlots(numberOfKeys: number, ...keysThenHolders: string[]): Result<number, Context>;
  }
}

interface SlotRequest {
  endpointId: string;
  holder: string;
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
    redis.defineCommand('acquireEndpointSlots', { lua: ACQUIRE });
    redis.defineCommand('releaseEndpointSlots', { lua: RELEASE });
  }

  /** The acquisitions asked for in one turn of the event loop, made in one Redis call. */
  private readonly acquisitions = new Batcher<SlotRequest, boolean>(async (requests) => {
    const now = Date.now();
    const keys = requests.map((request) => this.key(request.endpointId));
    const holders = requests.map((request) => request.holder);
    const acquired = await this.redis.acquireEndpointSlots(
      keys.length,
      ...keys,
      now,
      now + this.holdMs,
      this.limit,
      this.holdMs,
      ...holders,
    );
    return acquired.map((flag) => flag === 1);
  });

  /** The releases of one turn of the event loop, in one Redis call. */
  private readonly releases = new Batcher<SlotRequest>(async (requests) => {
    const keys = requests.map((request) => this.key(request.endpointId));
    await this.redis.releaseEndpointSlots(keys.length, ...keys, ...requests.map((request) => request.holder));
  });

  private key(endpointId: string): string {
    return `${this.prefix}:endpoint-slots:${endpointId}`;
  }

  acquire(endpointId: string, holder: string): Promise<boolean> {
    return this.acquisitions.add({ endpointId, holder });
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
      await this.releases.add({ endpointId, holder });
    } finally {
      this.waiting.get(endpointId)?.[0]?.();
    }
  }
}
