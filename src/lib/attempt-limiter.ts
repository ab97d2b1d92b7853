import type { RedisClient } from './redis.js';
import type { Logger } from './logger.js';

/**
 * Counts one attempt; the window starts with the first and ends `ARGV[1]` ms later. Returns the
 * count so far and the milliseconds left in the window.
 */
const TAKE = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

/** The count so far and the milliseconds left in the window (-2 when there is none). */
const PEEK = `return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}`;

/**
 * At most `limit` attempts per key in a fixed window, counted in Redis so that every web process
 * shares the count. Redis being away lifts the limit rather than the service: the web process
 * sends nothing to Redis that its answers depend on.
 */
export class AttemptLimiter {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly rule: { limit: number; windowMs: number },
    private readonly logger: Logger,
  ) {}

  private key(subject: string): string {
    return `${this.keyPrefix}:${subject}`;
  }

  /** Counts an attempt by `subject`: null when it is within the limit, else the seconds until the window ends. */
  take(subject: string): Promise<number | null> {
    return this.ask(TAKE, subject, (count) => count > this.rule.limit);
  }

  /** Without counting: null while `subject` has attempts left, else the seconds until the window ends. */
  exhausted(subject: string): Promise<number | null> {
    return this.ask(PEEK, subject, (count) => count >= this.rule.limit);
  }

  private async ask(script: string, subject: string, over: (count: number) => boolean): Promise<number | null> {
    try {
      const [count, ttlMs] = (await this.redis.eval(script, 1, this.key(subject), this.rule.windowMs)) as [number, number];
      return over(count) ? Math.max(ttlMs, 0) / 1000 : null;
    } catch (error) {
      this.logger.warn({ err: error, limiter: this.keyPrefix }, 'attempt limit not checked: RedisClient unavailable');
      return null;
    }
  }
}
