import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/**
 * Counts one attempt; the window starts with the first and ends `ARGV[1]` ms later. Returns the
 * count so far and the milliseconds left in the window.
 */
const TAKE = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

/** Takes one attempt back, unless its window is gone already. */
const GIVE_BACK = `if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECR', KEYS[1]) end
return 0`;

/**
 * At most `limit` attempts per key in a fixed window, counted in Redis so that every web process
 * shares the count. An attempt is counted before it is judged, so concurrent attempts cannot slip
 * past the limit together; one that turns out not to count (a right password) is given back.
 * Redis being away lifts the limit rather than the service: the web process sends nothing to Redis
 * that its answers depend on.
 */
export class AttemptLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly rule: { limit: number; windowMs: number },
    private readonly logger: Logger,
  ) {}

  private key(subject: string): string {
    return `${this.keyPrefix}:${subject}`;
  }

  /** Counts an attempt by `subject`: null when it is within the limit, else the seconds until the window ends. */
  async take(subject: string): Promise<number | null> {
    try {
      const [count, ttlMs] = (await this.redis.eval(TAKE, 1, this.key(subject), this.rule.windowMs)) as [number, number];
      return count > this.rule.limit ? Math.max(ttlMs, 0) / 1000 : null;
    } catch (error) {
      this.logger.warn({ err: error, limiter: this.keyPrefix }, 'attempt limit not checked: Redis unavailable');
      return null;
    }
  }

  /** An attempt that does not count after all. */
  async giveBack(subject: string): Promise<void> {
    await this.redis.eval(GIVE_BACK, 1, this.key(subject)).catch(() => undefined);
  }
}
