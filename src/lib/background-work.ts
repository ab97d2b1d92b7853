import type { Logger } from './logger.js';
import { withTimeout } from './time.js';

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
    const tracked: Promise<void> = withTimeout(work, this.timeoutMs, what)
      .then(
        () => undefined,
        (error: unknown) => this.logger.warn({ err: error, ...context }, `${what} failed`),
      )
      .finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  /**
   * Resolves when everything started so far has ended or been given up on, including what a
   * Batcher starts at the end of this turn for the calls made in it.
   */
  async finish(): Promise<void> {
    await new Promise(setImmediate);
    await Promise.all(this.running);
  }
}
