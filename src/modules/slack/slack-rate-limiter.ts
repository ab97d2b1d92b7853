import type { RedisClient } from '../../lib/redis.js';

/** Redis' own clock, in milliseconds, so that workers on different machines agree on the slots. */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** The channel's next free time; takes the slot (moving it one interval on) when it is free now. */
const TAKE = `${NOW}
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if free > now then return free - now end
redis.call('SET', KEYS[1], now + tonumber(ARGV[1]), 'PX', tonumber(ARGV[1]) + 1000)
return 0`;

/** Closes the channel until `ARGV[1]` ms from now, unless it is closed for longer already. */
const PAUSE = `${NOW}
local until_ms = now + tonumber(ARGV[1])
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if until_ms > free then redis.call('SET', KEYS[1], until_ms, 'PX', tonumber(ARGV[1]) + 1000) end
return 0`;

/**
 * Slack's limit on messages (about one a second per channel), kept in Redis so that every worker
 * shares it: a channel has one slot per interval, and a 429's Retry-After closes it for that long.
 */
export class SlackRateLimiter {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly intervalMs: number,
  ) {}

  private key(channel: string): string {
    return `${this.prefix}:slack-rate:${channel}`;
  }

  /** 0 when the caller has the channel's slot now; otherwise the milliseconds until one may be free. */
  async take(channel: string): Promise<number> {
    return Number(await this.redis.eval(TAKE, 1, this.key(channel), this.intervalMs));
  }

  /** Slack answered 429: nothing more to this channel for `ms`. */
  async pause(channel: string, ms: number): Promise<void> {
    await this.redis.eval(PAUSE, 1, this.key(channel), Math.max(1, Math.ceil(ms)));
  }
}
