import { vi } from 'vitest';

/** Polls `probe` (with vitest's `vi.waitFor`) until it gives a truthy value, and returns that value. */
export function eventually<T>(probe: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (!value) throw new Error(`condition not met in ${timeoutMs} ms`);
      return value as NonNullable<T>;
    },
    { timeout: timeoutMs, interval: 20 },
  );
}
