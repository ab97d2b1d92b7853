// Running many requests at once, with a bound and optionally a pace.
import { setTimeout as sleep } from 'node:timers/promises';
import { epochMs } from './proc-stats.js';

/** `fn` over every item with at most `limit` in flight; results in item order. */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export interface Pacing {
  concurrency: number;
  /** Without it, as fast as `concurrency` allows. */
  ratePerS?: number;
}

/** fn(i) for i < count, at most `concurrency` at once and, with a rate, none before its slot. */
export async function runPaced(count: number, pacing: Pacing, fn: (i: number) => Promise<void>): Promise<void> {
  const started = epochMs();
  let inFlight = 0;
  let slotFreed: (() => void) | null = null;
  const running: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    if (pacing.ratePerS) {
      const wait = started + (i * 1000) / pacing.ratePerS - epochMs();
      if (wait >= 1) await sleep(wait);
    }
    while (inFlight >= pacing.concurrency) await new Promise<void>((resolve) => (slotFreed = resolve));
    inFlight++;
    running.push(
      fn(i).finally(() => {
        inFlight--;
        const wake = slotFreed;
        slotFreed = null;
        wake?.();
      }),
    );
  }
  await Promise.all(running);
}
