import type { Logger } from 'pino';
import type { BackgroundWork } from '../../lib/background-work.js';
import type { Caller } from '../../lib/caller.js';
import { Deadlines } from '../../lib/deadlines.js';
import { execPipeline, subscribeWithin, type RedisClient } from '../../lib/redis.js';

/**
 * The channels settlements travel on. A message's format is fixed by its channel's version: a
 * change of format is a new channel, never new bytes on an old one, so that during a rolling
 * deploy a process of the previous release never misreads a message it does not know
 * (docs/operations.md, "Releases that overlap").
 *
 * - `approvals:settled` (legacy): one approval id per message, or several comma-separated. Every
 *   release so far reads a single id; the release before versioned channels also splits commas,
 *   and the one before it does not, which is why this one sends a single id per message there.
 * - `approvals:settled:v2`: `{"v":2,"approvalIds":[...]}`; unknown fields are ignored.
 */
const LEGACY_CHANNEL = 'approvals:settled';
const V2_CHANNEL = 'approvals:settled:v2';

/**
 * How long the count of legacy readers is trusted. A process of the previous release that
 * subscribes just after a check misses at most this much; its long-polls then answer when their
 * wait runs out, with the right state.
 */
const LEGACY_READERS_RECHECK_MS = 2_000;

/** The approval ids of a message of either channel; nothing for a malformed one. */
export function readSettlementMessage(version: 'legacy' | 'v2', message: string): string[] {
  if (version === 'legacy') return message.split(',').filter(Boolean);
  try {
    const { approvalIds } = JSON.parse(message) as { approvalIds?: unknown };
    return Array.isArray(approvalIds) ? approvalIds.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * Tells long-polling readers that an approval left `pending`, across every process.
 *
 * Each process keeps one Redis subscriber and a local table of waiters by approval id, so ten
 * thousand waiting requests cost ten thousand map entries, not ten thousand Redis subscriptions or
 * database polls. Deciders publish after their transaction commits; a message lost to a Redis
 * outage only delays the waiter until its `wait` runs out, when it re-reads the database, so the
 * answer is never wrong, at worst late. The settlements of one event-loop turn (a batch of votes
 * answered together) share one message on the v2 channel: one PUBLISH, and one message for every
 * subscribed process, instead of one per settlement.
 *
 * While processes of a previous release listen on the legacy channel (a rolling deploy), each
 * settlement also goes there on its own. This release listens there with a pattern subscription,
 * which Redis does not count among a channel's subscribers (PUBSUB NUMSUB), so the count is that of
 * the previous release's processes alone, and drops to zero once the last of them stops.
 */
export class ApprovalSettlements {
  private readonly waiters = new Map<string, Set<() => void>>();
  /** One timer per wait length, whatever the number of waiters. */
  private readonly deadlines = new Map<number, Deadlines>();
  private readonly legacyChannel: string;
  private readonly v2Channel: string;
  private legacyReaders = { present: false, checkedAt: -Infinity };
  private closed = false;
  /** Announces a committed settlement, as background work: nobody waits for it. */
  readonly publish: (approvalId: string) => void;

  /** Without a subscriber (worker processes, which hold no long-polls) it only publishes. */
  constructor(
    private readonly publisher: RedisClient,
    private readonly subscriber: RedisClient | null,
    prefix: string,
    private readonly logger: Logger,
    background: BackgroundWork,
  ) {
    this.legacyChannel = `${prefix}:${LEGACY_CHANNEL}`;
    this.v2Channel = `${prefix}:${V2_CHANNEL}`;
    this.publish = background.eachTurn(
      'waking long-polls (they read again when their wait runs out)',
      (approvalIds: string[]) => this.send(approvalIds),
      (approvalIds) => ({ approvalIds }),
    );
    this.subscriber?.on('message', (channel: string, message: string) => {
      if (channel === this.v2Channel) this.wakeAll(readSettlementMessage('v2', message));
    });
    this.subscriber?.on('pmessage', (_pattern: string, channel: string, message: string) => {
      if (channel === this.legacyChannel) this.wakeAll(readSettlementMessage('legacy', message));
    });
  }

  private async send(approvalIds: string[]): Promise<void> {
    const pipeline = this.publisher.pipeline().publish(this.v2Channel, JSON.stringify({ v: 2, approvalIds }));
    if (await this.legacyReadersPresent()) for (const approvalId of approvalIds) pipeline.publish(this.legacyChannel, approvalId);
    await execPipeline(pipeline);
  }

  private async legacyReadersPresent(): Promise<boolean> {
    if (performance.now() - this.legacyReaders.checkedAt >= LEGACY_READERS_RECHECK_MS) {
      const [, count] = (await this.publisher.pubsub('NUMSUB', this.legacyChannel)) as [string, number];
      this.legacyReaders = { present: Number(count) > 0, checkedAt: performance.now() };
    }
    return this.legacyReaders.present;
  }

  /**
   * Subscribes; ioredis re-subscribes by itself after a reconnect. Waits at most `timeoutMs`:
   * the API must come up while Redis is away, with long-polls answering at the end of their wait.
   */
  async start(timeoutMs = 2000): Promise<void> {
    if (!this.subscriber) return;
    const subscribed = await Promise.all([
      subscribeWithin(this.subscriber, this.v2Channel, timeoutMs, this.logger),
      subscribeWithin(this.subscriber, globEscape(this.legacyChannel), timeoutMs, this.logger, 'pattern'),
    ]);
    if (subscribed.includes(false)) this.logger.warn('approval settlements not subscribed yet; long-polls answer when their wait ends');
  }

  /**
   * Registers interest in an approval before its state is read, so that a settlement landing
   * between the read and the wait is not missed. `wait` resolves on settlement, timeout or when
   * the caller goes away; `release` must always be called.
   */
  watch(approvalId: string): { wait(timeoutMs: number, caller: Caller): Promise<void>; release(): void } {
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    let listeners = this.waiters.get(approvalId);
    if (!listeners) this.waiters.set(approvalId, (listeners = new Set()));
    listeners.add(wake);

    return {
      wait: (timeoutMs, caller) => {
        if (caller.gone || this.closed) return Promise.resolve();
        let deadlines = this.deadlines.get(timeoutMs);
        if (!deadlines) this.deadlines.set(timeoutMs, (deadlines = new Deadlines(timeoutMs)));
        const cancel = deadlines.add(wake);
        caller.onGone(wake);
        return woken.finally(cancel);
      },
      release: () => {
        listeners.delete(wake);
        if (listeners.size === 0 && this.waiters.get(approvalId) === listeners) this.waiters.delete(approvalId);
      },
    };
  }

  /**
   * For a prompt graceful shutdown: every waiter, current and future, answers now with the state
   * as it is, instead of holding the process for up to 30 s.
   */
  close(): void {
    this.closed = true;
    for (const approvalId of [...this.waiters.keys()]) this.wake(approvalId);
  }

  get waiting(): number {
    let count = 0;
    for (const listeners of this.waiters.values()) count += listeners.size;
    return count;
  }

  private wakeAll(approvalIds: readonly string[]): void {
    for (const approvalId of approvalIds) this.wake(approvalId);
  }

  private wake(approvalId: string): void {
    const listeners = this.waiters.get(approvalId);
    if (listeners) for (const wake of listeners) wake();
  }
}

/** A pattern that matches exactly this channel name. */
function globEscape(channel: string): string {
  return channel.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}
