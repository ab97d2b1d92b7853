import type { Logger } from './logger.js';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits. A timer below the platform's 30 s kill
 * deadline forces the exit if draining hangs, so the process never outlives its welcome.
 */
export function exitGracefullyOnSignal(logger: Logger, timeoutMs: number, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out; exiting anyway');
      process.exit(1);
    }, timeoutMs).unref();
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
