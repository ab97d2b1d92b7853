import { performance } from 'node:perf_hooks';

interface Entry {
  at: number;
  /** null once the waiter was woken otherwise: nothing left to do at its deadline. */
  wake: (() => void) | null;
}

/**
 * Deadlines that all lie the same time after they are set, served by one timer: entries end in
 * the order they were added, so the timer only ever waits for the oldest. Ten thousand waiters
 * cost ten thousand small entries in one array, not ten thousand timers.
 */
export class Deadlines {
  private entries: (Entry | undefined)[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly afterMs: number) {}

  /** Calls `wake` `afterMs` from now, unless the returned cancel is called first. */
  add(wake: () => void): () => void {
    const entry: Entry = { at: performance.now() + this.afterMs, wake };
    this.entries.push(entry);
    this.timer ??= setTimeout(this.fire, this.afterMs);
    return () => (entry.wake = null);
  }

  get size(): number {
    return this.entries.length - this.head;
  }

  private readonly fire = (): void => {
    this.timer = null;
    const now = performance.now();
    while (this.head < this.entries.length && this.entries[this.head]!.at <= now) {
      const { wake } = this.entries[this.head]!;
      this.entries[this.head++] = undefined;
      wake?.();
    }
    if (this.head === this.entries.length) {
      this.entries = [];
      this.head = 0;
      return;
    }
    if (this.head > this.entries.length / 2) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    this.timer = setTimeout(this.fire, Math.max(1, this.entries[this.head]!.at - now));
  };
}
