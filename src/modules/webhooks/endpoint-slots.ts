import type { Redis } from 'ioredis';

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

export class EndpointSlots {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly holdMs: number,
  ) {}

  private key(endpointId: string): string {
    return `${this.prefix}:endpoint-slots:${endpointId}`;
  }

  async acquire(endpointId: string, holder: string): Promise<boolean> {
    const now = Date.now();
    const acquired = await this.redis.eval(ACQUIRE, 1, this.key(endpointId), now, now + this.holdMs, this.limit, holder, this.holdMs);
    return acquired === 1;
  }

  async release(endpointId: string, holder: string): Promise<void> {
    await this.redis.zrem(this.key(endpointId), holder);
  }
}
