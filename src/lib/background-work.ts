import type { Logger } from './logger.js';
import { withTimeout } from './time.js';

/**
 * How long enqueueing work that a sweeper would also find in Postgres waits on Redis (a request's
 * wait, or a hint's in the background): past it the wait is given up, and the work starts late
 * instead of never.
 */
export const ENQUEUE_HINT_TIMEOUT_MS = 250;

/**
 * Work that an answer does not wait for: the hints sent to Redis after a commit (an expiry to
 * schedule, a relay or a long-poll to wake), none of which correctness needs. An answer that waited
 * for them paid a Redis round trip, and a Redis that hangs without closing its connections (no
 * reply, no error) held every creation and decision with it. Each piece of work is given up on
 * after `timeoutMs`, so a hung Redis costs a bounded number of them in memory, and a shutdown
 * can let the rest finish before the connections close.
 */
export class BackgroundWork {
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly logger: Logger,
    private readonly timeoutMs: number,
  ) {}

  /** `what` names the work and what covers its failure, which is logged with `context`. */
  start(what: string, work: Promise<unknown>, context: Record<string, unknown> = {}): void {
    this.track(
      withTimeout(work, this.timeoutMs, what).then(
        () => undefined,
        (error: unknown) => this.logger.warn({ err: error, ...context }, `${what} failed`),
      ),
    );
  }

  /**
   * Work whose calls of one event-loop turn go out together, as one piece of work started at the
   * end of the turn: a batch of writes answered in one turn sends one Redis command, with one
   * timeout, instead of one each. `context` says what a failure lost.
   */
  eachTurn<Item>(
    what: string,
    send: (items: Item[]) => Promise<unknown>,
    context: (items: Item[]) => Record<string, unknown> = () => ({}),
  ): (item: Item) => void {
    let waiting: Item[] = [];
    return (item) => {
      waiting.push(item);
      if (waiting.length > 1) return;
      this.track(
        new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
          const items = waiting;
          waiting = [];
          this.start(what, send(items), context(items));
        }),
      );
    };
  }

  /** Resolves once nothing is running: what was started, and what it started in turn, has ended or been given up on. */
  async finish(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private track(work: Promise<void>): void {
    const tracked: Promise<void> = work.finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }
}
