import { GroupCommit } from './group-commit.js';

/**
 * Collects the calls made in one turn of the event loop and serves them with a single flush: under
 * load, many requests share one Redis round trip instead of paying one each. A group commit with
 * no bound on a batch's size or on the flushes running at once; a flush that answers each item (in
 * order) resolves each call with its own answer, one that returns nothing resolves them all.
 */
export class Batcher<T, R = void> {
  private readonly calls: GroupCommit<T, R>;

  constructor(flush: (items: T[]) => Promise<R[] | void>) {
    this.calls = new GroupCommit(async (items) => (await flush(items)) ?? items.map(() => undefined as R), {
      maxBatch: Infinity,
      maxInFlight: Infinity,
    });
  }

  add(item: T): Promise<R> {
    return this.calls.submit(item);
  }
}
