// How every benchmark runs: settings from the environment, progress on stderr, and a cleanup that
// always runs (error, signal or deadline) before the process exits.

/** Progress, on stderr: stdout carries the results, with the JSON figures as its last line. */
export const log = (message: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);

/** A positive number from the environment, or the fallback. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got '${raw}'`);
  return value;
}

/** A positive whole number from the environment (rounded), or the fallback. */
export function envInt(name: string, fallback: number): number {
  return Math.round(envNumber(name, fallback));
}

/** A yes/no switch from the environment: `0`, `false` and `no` are off, anything else is on. */
export function envFlag(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : !['0', 'false', 'no'].includes(raw.toLowerCase());
}

export type Cleanup = (work: () => Promise<unknown> | unknown) => void;

/**
 * Runs `body`, then every registered cleanup (last registered first), then exits. A deadline,
 * SIGINT or SIGTERM stops the benchmark the same way, so the script always ends by itself.
 */
export function runBenchmark(name: string, deadlineMs: number, body: (cleanup: Cleanup) => Promise<void>): void {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  let finishing = false;
  const finish = async (code: number, reason?: unknown) => {
    if (finishing) return;
    finishing = true;
    if (reason !== undefined)
      console.error(`\n${name}: FAILED: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
    for (const work of cleanups.reverse()) {
      try {
        await work();
      } catch (error) {
        console.error(`${name}: cleanup step failed: ${String(error)}`);
      }
    }
    process.exit(code);
  };
  const deadline = setTimeout(() => void finish(1, `deadline of ${Math.round(deadlineMs / 1000)} s reached`), deadlineMs);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void finish(130, `interrupted by ${signal}`));
  body((work) => cleanups.push(work)).then(
    () => {
      clearTimeout(deadline);
      return finish(0);
    },
    (error: unknown) => finish(1, error),
  );
}
