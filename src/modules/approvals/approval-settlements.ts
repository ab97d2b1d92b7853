import type { Logger } from 'pino';
import type { BackgroundWork } from '../../lib/background-work.js';
import type { Caller } from '../../lib/caller.js';
import { Deadlines } from '../../lib/deadlines.js';
import { subscribeWithin, type RedisClient } from '../../lib/redis.js';

/** Between the ids of one message; an approval id (a UUID) never holds it. */
const ID_SEPARATOR = ',';

/**
 * Tells long-polling readers that an approval left `pending`, across every process.
 *
 * Each process keeps one Redis subscriber on one channel and a local table of waiters by approval
 * id, so ten thousand waiting requests cost ten thousand map entries, not ten thousand Redis
 * subscriptions or database polls. Deciders publish after their transaction commits; a message
 * lost to a Redis outage only delays the waiter until its `wait` runs out, when it re-reads the
 * database, so the answer is never wrong, at worst late. The settlements of one event-loop turn
 * (a batch of votes answered together) share one message, their ids separated by commas: one
 * PUBLISH, and one message for every subscribed process, instead of one per settlement.
 */
export class ApprovalSettlements {
  private readonly waiters = new Map<string, Set<() => void>>();
  /** One timer per wait length, whatever the number of waiters. */
  private readonly deadlines = new Map<number, Deadlines>();
  private readonly channel: string;
  private closed = false;
  /** Announces a committed settlement, as background work: nobody waits for it. */
  readonly publish: (approvalId: string) => void;

  /** Without a subscriber (worker processes, which hold no long-polls) it only publishes. */
  constructor(
    publisher: RedisClient,
    private readonly subscriber: RedisClient | null,
    prefix: string,
    private readonly logger: Logger,
    background: BackgroundWork,
  ) {
    this.channel = `${prefix}:approvals:settled`;
    this.publish = background.eachTurn(
      'waking long-polls (they read again when their wait runs out)',
      (approvalIds: string[]) => publisher.publish(this.channel, approvalIds.join(ID_SEPARATOR)),
      (approvalIds) => ({ approvalIds }),
    );
    this.subscriber?.on('message', (channel: string, approvalIds: string) => {
      if (channel === this.channel) for (const approvalId of approvalIds.split(ID_SEPARATOR)) this.wake(approvalId);
    });
  }

  /**
   * Subscribes; ioredis re-subscribes by itself after a reconnect. Waits at most `timeoutMs`:
   * the API must come up while Redis is away, with long-polls answering at the end of their wait.
   */
  async start(timeoutMs = 2000): Promise<void> {
    if (this.subscriber && !(await subscribeWithin(this.subscriber, this.channel, timeoutMs, this.logger))) {
      this.logger.warn('approval settlements not subscribed yet; long-polls answer when their wait ends');
    }
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

  private wake(approvalId: string): void {
    const listeners = this.waiters.get(approvalId);
    if (listeners) for (const wake of listeners) wake();
  }
}
