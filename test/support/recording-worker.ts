// A worker process with the recording consumer registered next to the real ones, for tests that
// kill it: `node --import tsx test/support/recording-worker.ts <role,role,...>`.
import { loadConfig } from '../../src/config.js';
import { CONSUMERS } from '../../src/consumers/registry.js';
import { createLogger } from '../../src/lib/logger.js';
import { exitGracefullyOnSignal } from '../../src/lib/shutdown.js';
import { createServices } from '../../src/services.js';
import { startWorkerRuntime } from '../../workers/worker-runtime.js';
import { recordingConsumer } from './recording-consumer.js';

const config = loadConfig();
const logger = createLogger(config, 'recording-worker');
const services = await createServices(config, logger, 'worker', { consumers: [...CONSUMERS, recordingConsumer] });
const runtime = await startWorkerRuntime(services, process.argv[2]!.split(','));
console.log('recording worker ready');
exitGracefullyOnSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await runtime.stop();
  await services.close();
});
