interface Pending<Item, Result> {
  item: Item;
  queuedAt: number;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/** One batch as run: how many calls it held, and the seconds from its start to its answer. */
export interface BatchRun {
  size: number;
  seconds: number;
}

export interface GroupCommitOptions {
  /** Items one batch takes at most. */
  maxBatch: number;
  /** Batches running at once; calls beyond wait and join the next batch. */
  maxInFlight: number;
  /** Told of every batch once it is answered or has failed: how many calls shared its commit, and how long it ran. */
  onBatch?: (batch: BatchRun) => void;
  /**
   * A call still queued this long after it was submitted is refused with `error()` instead of run:
   * when the database is slow or gone, a backlog is shed with an answer that says "retry" rather
   * than waiting behind batches that may each take their whole query timeout.
   */
  queueDeadline?: { ms: number; error: () => Error };
}

/**
 * Group commit: a call that finds a slot free starts a batch at the end of the event loop's turn
 * (setImmediate), so the calls made in the same turn join it; idle, that adds microseconds. While
 * `maxInFlight` batches are running, calls queue and the next free slot takes them all (up to
 * `maxBatch`) in one run. Under load many calls share one round trip and one commit, and the batch
 * size follows the load by itself, with no timer. `run` answers each item in order; an item's own
 * failure is its result's business, a thrown error fails the whole batch.
 *
 * Why the end of the turn: calls arrive in clumps, when one answer lets many requests go on (a
 * batch of API-key reads answered together goes on to write together). Started at the first call,
 * the batch held that one alone and the rest of the clump waited a whole round trip behind it.
 */
export class GroupCommit<Item, Result> {
  private readonly queue: Pending<Item, Result>[] = [];
  private inFlight = 0;
  private drainScheduled = false;

  constructor(
    private readonly run: (items: Item[]) => Promise<Result[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  submit(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, queuedAt: performance.now(), resolve, reject });
      if (this.inFlight < this.options.maxInFlight) this.drainAtEndOfTurn();
    });
  }

  private drainAtEndOfTurn(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    this.refuseOverdue();
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.runBatch(batch);
    }
  }

  /** The queue is in submission order, so the overdue calls are at its head. */
  private refuseOverdue(): void {
    const deadline = this.options.queueDeadline;
    if (!deadline) return;
    const oldestAllowed = performance.now() - deadline.ms;
    while (this.queue.length > 0 && this.queue[0]!.queuedAt < oldestAllowed) this.queue.shift()!.reject(deadline.error());
  }

  private async runBatch(batch: Pending<Item, Result>[]): Promise<void> {
    let answered: { results: Result[] } | { error: unknown };
    const started = performance.now();
    try {
      const results = await this.run(batch.map((entry) => entry.item));
      if (results.length !== batch.length) throw new Error(`a batch of ${batch.length} was answered ${results.length} times`);
      answered = { results };
    } catch (error) {
      answered = { error };
    }
    this.options.onBatch?.({ size: batch.length, seconds: (performance.now() - started) / 1000 });
    // The slot goes to the calls queued meanwhile before this batch's callers go on: answered
    // first, their continuations would be queued ahead of the next batch's start.
    this.inFlight--;
    try {
      this.drain();
    } finally {
      if ('error' in answered) for (const entry of batch) entry.reject(answered.error);
      else batch.forEach((entry, index) => entry.resolve(answered.results[index]!));
    }
  }
}
