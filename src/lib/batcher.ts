interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Collects the calls made in one turn of the event loop and serves them with a single flush: under
 * load, many requests share one Redis round trip instead of paying one each. A flush that answers
 * each item (in order) resolves each call with its own answer.
 */
export class Batcher<T, R = void> {
  private waiting: Waiting<T, R>[] = [];

  constructor(private readonly flush: (items: T[]) => Promise<R[] | void>) {}

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      if (this.waiting.push({ item, resolve, reject }) === 1) setImmediate(() => void this.run());
    });
  }

  private async run(): Promise<void> {
    const batch = this.waiting;
    this.waiting = [];
    try {
      const results = await this.flush(batch.map((entry) => entry.item));
      batch.forEach((entry, index) => entry.resolve(results?.[index] as R));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
