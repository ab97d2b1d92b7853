import { loadConfig } from './config.js';
import { createApp, createHttpServer } from './http/app.js';
import { answerClientErrors } from './http/client-errors.js';
import { listen, PortInUseError } from './lib/listen.js';
import { createLogger } from './lib/logger.js';
import { exitGracefullyOnSignal } from './lib/shutdown.js';
import { createServices } from './services.js';

/** The `web` process: the HTTP API. */
const config = loadConfig();
const logger = createLogger(config, 'web');
const services = await createServices(config, logger, 'web');
const server = createHttpServer(createApp(services));
answerClientErrors(server);
try {
  await listen(server, config.PORT);
} catch (error) {
  if (!(error instanceof PortInUseError)) throw error;
  logger.fatal(error.message);
  await services.close();
  process.exit(1);
}
// Above a typical load balancer's idle timeout, so the balancer closes idle connections first.
server.keepAliveTimeout = 65_000;
logger.info({ port: config.PORT }, 'api listening');

exitGracefullyOnSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  const closed = new Promise((resolve) => server.close(resolve));
  // Long-polls answer now with the current state instead of holding the shutdown for 30 s.
  services.settlements.close();
  services.approvalFeed.close();
  // Keep-alive connections turn idle as their last response goes out; close each as it does.
  const closeIdle = setInterval(() => server.closeIdleConnections(), 50);
  await closed;
  clearInterval(closeIdle);
  await services.close();
});
