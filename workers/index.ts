import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/lib/logger.js';
import { exitGracefullyOnSignal } from '../src/lib/shutdown.js';
import { createServices } from '../src/services.js';
import { parseWorkerRoles, startWorkerRuntime } from './worker-runtime.js';

/** The `worker` process: every queue processor and the outbox relay, or the roles in WORKER_QUEUES. */
const config = loadConfig();
const logger = createLogger(config, 'worker');
const roles = parseWorkerRoles(config.WORKER_QUEUES);
const services = await createServices(config, logger, 'worker');
const runtime = await startWorkerRuntime(services, roles);

exitGracefullyOnSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  // Running jobs finish (BullMQ waits for them); a job cut off by the hard timeout is retried
  // elsewhere once its lock expires, so stopping at any time loses nothing.
  await runtime.stop();
  await services.close();
});
