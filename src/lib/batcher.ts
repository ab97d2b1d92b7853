interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Collects the calls made in one turn of the event loop and serves them with a single flush: under
 * load, many requests share one Redis round trip instead of paying one each.
 */
export class Batcher<T> {
  private waiting: Waiting<T>[] = [];

  constructor(private readonly flush: (items: T[]) => Promise<void>) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.waiting.push({ item, resolve, reject }) === 1) setImmediate(() => void this.run());
    });
  }

  private async run(): Promise<void> {
    const batch = this.waiting;
    this.waiting = [];
    try {
      await this.flush(batch.map((entry) => entry.item));
      for (const entry of batch) entry.resolve();
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }
}
