import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../lib/redis.js';
import { RateLimitedError } from '../../lib/errors.js';
import { ExpiringSlots, type SlotHold } from '../../lib/expiring-slots.js';
import type { Logger } from '../../lib/logger.js';
import { principalKey, type Tenant } from '../orgs/tenant.js';

/** Open live-feed streams one principal may hold, across every web process (docs/api.md). */
export const STREAMS_PER_PRINCIPAL = 10;

/**
 * A stream's slot lapses this long after it was last renewed, so the streams of a process that
 * died without closing them stop counting within a minute.
 */
const HOLD_MS = 60_000;
const RENEW_EVERY_MS = 20_000;

/** What a refused stream is told to wait: a console's streams close as its tabs do. */
const RETRY_AFTER_SECONDS = 10;

/** Renewals sent in one Redis call: a process with very many streams renews them in slices. */
const RENEW_SLICE = 500;

/**
 * The limit on open streams per principal. The count is a sorted set per principal in Redis, one
 * member per open stream scored by when its hold lapses: every web process shares it, each
 * renews the holds of its own open streams while they stay open, and removes one when it closes.
 */
export class FeedStreamSlots {
  private readonly slots: ExpiringSlots;
  /** The holds of this process's open streams, renewed together. */
  private readonly held = new Set<SlotHold>();
  private renewing: NodeJS.Timeout | null = null;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {
    this.slots = new ExpiringSlots(redis, STREAMS_PER_PRINCIPAL, HOLD_MS);
  }

  /**
   * Takes a slot for one more stream of the tenant's principal, or throws 429 when it holds all of
   * them; returns what frees it. Redis being away lifts the limit rather than the feed: the
   * stream opens without a slot (it hears nothing live until Redis is back anyway).
   */
  async take(tenant: Pick<Tenant, 'principal'>): Promise<() => void> {
    const hold = { key: `${this.prefix}:feed-streams:${principalKey(tenant.principal)}`, holder: randomUUID() };
    let taken: boolean;
    try {
      [taken] = (await this.slots.acquire([hold])) as [boolean];
    } catch (error) {
      this.logger.warn({ err: error }, 'feed stream limit not checked: RedisClient unavailable');
      return () => {};
    }
    if (!taken) {
      throw new RateLimitedError(
        `At most ${STREAMS_PER_PRINCIPAL} live feed streams may be open at once for the same member or service key; close one first.`,
        RETRY_AFTER_SECONDS,
      );
    }
    this.held.add(hold);
    this.renewing ??= setInterval(() => void this.renew(), RENEW_EVERY_MS).unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held.delete(hold);
      if (this.held.size === 0 && this.renewing) {
        clearInterval(this.renewing);
        this.renewing = null;
      }
      this.slots.release([hold]).catch((error: unknown) => this.logger.warn({ err: error }, 'feed stream slot not released; it lapses'));
    };
  }

  private async renew(): Promise<void> {
    const holds = [...this.held];
    for (let start = 0; start < holds.length; start += RENEW_SLICE) {
      await this.slots.renew(holds.slice(start, start + RENEW_SLICE)).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'feed stream slots not renewed; retried at the next renewal');
      });
    }
  }
}
