/// <reference path="../types/cluster-key-slot.d.ts" />
import calculateSlot from 'cluster-key-slot';
import type { Result } from 'ioredis';
import type { RedisClient } from './redis.js';

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
 * taken or last renewed. Each call is one Redis round trip for all the holds it is given; on a
 * Redis Cluster, one per hash slot among their keys, since one script may only touch keys of one
 * slot (and the keys of different endpoints or principals are spread over the cluster on purpose).
 */
export class ExpiringSlots {
  constructor(
    private readonly redis: RedisClient,
    private readonly limit: number,
    readonly holdMs: number,
  ) {
    redis.defineCommand('acquireExpiringSlots', { lua: ACQUIRE });
    redis.defineCommand('releaseExpiringSlots', { lua: RELEASE });
    redis.defineCommand('renewExpiringSlots', { lua: RENEW });
  }

  /** One answer per hold asked for: whether it was taken. */
  async acquire(holds: readonly SlotHold[]): Promise<boolean[]> {
    const acquired = new Array<boolean>(holds.length);
    await this.perSlot(holds, async (group) => {
      const now = Date.now();
      const flags = await this.redis.acquireExpiringSlots(
        group.length,
        ...group.map(({ hold }) => hold.key),
        now,
        now + this.holdMs,
        this.limit,
        this.holdMs,
        ...group.map(({ hold }) => hold.holder),
      );
      group.forEach(({ index }, at) => (acquired[index] = flags[at] === 1));
    });
    return acquired;
  }

  async release(holds: readonly SlotHold[]): Promise<void> {
    await this.perSlot(holds, (group) =>
      this.redis.releaseExpiringSlots(group.length, ...group.map(({ hold }) => hold.key), ...group.map(({ hold }) => hold.holder)),
    );
  }

  async renew(holds: readonly SlotHold[]): Promise<void> {
    await this.perSlot(holds, (group) =>
      this.redis.renewExpiringSlots(
        group.length,
        ...group.map(({ hold }) => hold.key),
        Date.now() + this.holdMs,
        this.holdMs,
        ...group.map(({ hold }) => hold.holder),
      ),
    );
  }

  /** Runs `call` once for all the holds on one server, once per hash slot on a cluster, concurrently. */
  private async perSlot(holds: readonly SlotHold[], call: (group: { hold: SlotHold; index: number }[]) => Promise<unknown>) {
    const indexed = holds.map((hold, index) => ({ hold, index }));
    if (!this.redis.isCluster) return void (await call(indexed));
    const groups = new Map<number, typeof indexed>();
    for (const entry of indexed) {
      const slot = calculateSlot(entry.hold.key);
      const group = groups.get(slot);
      if (group) group.push(entry);
      else groups.set(slot, [entry]);
    }
    await Promise.all([...groups.values()].map(call));
  }
}
