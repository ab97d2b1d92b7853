import { setTimeout as sleep } from 'node:timers/promises';
import { FailureRunLog } from '../src/lib/failure-run-log.js';
import type { Logger } from '../src/lib/logger.js';

/**
 * Runs `look` until `stop` aborts, sleeping between looks for as long as it answers (a failed look
 * is tried again after `maxWaitMs`): the loop of the workers' watchers, which find in PostgreSQL
 * what has fallen due and hand it to a queue.
 */
export async function watchUntilStopped(
  stop: AbortSignal,
  logger: Logger,
  name: string,
  maxWaitMs: number,
  look: () => Promise<number>,
): Promise<void> {
  const failures = new FailureRunLog(logger, name, 'looking again shortly');
  while (!stop.aborted) {
    let waitMs = maxWaitMs;
    try {
      waitMs = await look();
      failures.succeeded();
    } catch (error) {
      failures.failed(error);
    }
    // The sleep rejects only when `stop` aborts, which ends the loop.
    if (waitMs > 0) await sleep(waitMs, undefined, { signal: stop }).catch(() => undefined);
  }
}
