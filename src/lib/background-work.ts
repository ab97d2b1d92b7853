import type { Logger } from './logger.js';

/**
 * Work that an answer does not wait for: the hints sent to Redis after a commit (an expiry to
 * schedule, a relay or a long-poll to wake), none of which correctness needs. An answer that waited
 * for them paid a Redis round trip, and a Redis that hangs without closing its connections (no
 * reply, no error) held every creation and decision with it. The work is kept until it ends, so a
 * shutdown can let it finish before the connections close.
 */
export class BackgroundWork {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly logger: Logger) {}

  /** `work` handles its own failures; one it did not expect is logged here. */
  start(work: Promise<unknown>): void {
    const tracked: Promise<void> = work
      .then(
        () => undefined,
        (error: unknown) => this.logger.error({ err: error }, 'background work failed'),
      )
      .finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  /** Resolves when everything started so far has ended. */
  async finish(): Promise<void> {
    await Promise.all(this.running);
  }
}
