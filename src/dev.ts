import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadConfig } from './config.js';
import { demoEnvironment, describeDemo, prepareDemo } from './cli/demo-seed.js';
import { parseProcfile, runToEnd, runTogether } from './cli/procfile.js';
import { listen, PortInUseError } from './lib/listen.js';
import { createLogger } from './lib/logger.js';
import { createServices } from './services.js';

/**
 * `npm run dev`: the Procfile on one machine. Runs `release` (migrations), prints the demo
 * organization (the one saved in DEMO_FILE, or a new one), then runs every other process type of
 * the Procfile until Ctrl-C, or until one of them exits, which stops the rest.
 */
const DEMO_FILE = '.approval-gate-dev.json';
const processTypes = parseProcfile(readFileSync('Procfile', 'utf8'));
const config = loadConfig();

// A taken port is found before anything starts, so it is one line and nothing to clean up.
const probe = createServer();
try {
  await listen(probe, config.PORT);
} catch (error) {
  if (!(error instanceof PortInUseError)) throw error;
  console.error(error.message);
  process.exit(1);
}
await new Promise((resolve) => probe.close(resolve));

const releaseCode = await runToEnd(processTypes.get('release')!);
if (releaseCode !== 0) process.exit(releaseCode);

const services = await createServices(config, createLogger({ ...config, LOG_LEVEL: 'warn' }, 'dev'), 'cli');
const demo = await prepareDemo(services, DEMO_FILE, demoEnvironment(config));
await services.close();
console.log(describeDemo(demo, { file: DEMO_FILE, port: config.PORT }));

processTypes.delete('release');
process.exitCode = await runTogether(processTypes, (line) => console.error(`[dev] ${line}`));
