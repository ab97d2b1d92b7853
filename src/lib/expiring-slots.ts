import type { Redis, Result } from 'ioredis';

/**
 * Takes a slot of each key for its holder, if the key has fewer than `limit` live holders.
 * Holders are kept in a sorted set scored by when their hold lapses, so a process that dies
 * holding slots frees them when the holds lapse instead of leaking them forever.
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

/** Pushes back the lapse of holds still held; a hold that lapsed already is not taken again. */
const RENEW = `
for i, key in ipairs(KEYS) do
  if redis.call('ZADD', key, 'XX', 'CH', ARGV[1], ARGV[2 + i]) == 1 then redis.call('PEXPIRE', key, ARGV[2]) end
end
return #KEYS`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /**
     * ACQUIRE above for many (key, holder) pairs at once: keys, then now, expiresAt, limit, holdMs
     * and one holder per key; one 0 or 1 per key. Sent once, then run by its SHA.
     */
    acquireExpiringSlots(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Result<number[], Context>;
    /** RELEASE above: keys, then one holder per key. */
    releaseExpiringSlots(numberOfKeys: number, ...keysThenHolders: string[]): Result<number, Context>;
    /** RENEW above: keys, then expiresAt, holdMs and one holder per key. */
    renewExpiringSlots(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Result<number, Context>;
  }
}

export interface SlotHold {
  /** The Redis key of the limited thing (an endpoint, a principal's streams). */
  key: string;
  /** Unique per hold. */
  holder: string;
}

/**
 * At most `limit` holders per key across every process, each hold lapsing `holdMs` after it was
 * taken or last renewed. Each call is one Redis round trip for all the holds it is given.
 */
export class ExpiringSlots {
  constructor(
    private readonly redis: Redis,
    private readonly limit: number,
    readonly holdMs: number,
  ) {
    redis.defineCommand('acquireExpiringSlots', { lua: ACQUIRE });
    redis.defineCommand('releaseExpiringSlots', { lua: RELEASE });
    redis.defineCommand('renewExpiringSlots', { lua: RENEW });
  }

  /** One answer per hold asked for: whether it was taken. */
  async acquire(holds: readonly SlotHold[]): Promise<boolean[]> {
    const now = Date.now();
    const acquired = await this.redis.acquireExpiringSlots(
      holds.length,
      ...holds.map((hold) => hold.key),
      now,
      now + this.holdMs,
      this.limit,
      this.holdMs,
      ...holds.map((hold) => hold.holder),
    );
    return acquired.map((flag) => flag === 1);
  }

  async release(holds: readonly SlotHold[]): Promise<void> {
    await this.redis.releaseExpiringSlots(holds.length, ...holds.map((hold) => hold.key), ...holds.map((hold) => hold.holder));
  }

  async renew(holds: readonly SlotHold[]): Promise<void> {
    await this.redis.renewExpiringSlots(
      holds.length,
      ...holds.map((hold) => hold.key),
      Date.now() + this.holdMs,
      this.holdMs,
      ...holds.map((hold) => hold.holder),
    );
  }
}
