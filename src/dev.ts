import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadConfig } from './config.js';
import { seedDemo } from './cli/demo-seed.js';
import { createLogger } from './lib/logger.js';
import { createServices } from './services.js';

/**
 * `npm run dev`: the Procfile on one machine. Runs `release` (migrations), seeds and prints a demo
 * organization, then runs every other process type of the Procfile until Ctrl-C.
 */
const processTypes = Object.fromEntries(
  readFileSync('Procfile', 'utf8')
    .split('\n')
    .map((line) => /^([\w-]+):\s*(.+)$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1]!, match[2]!]),
);

function run(name: string, command: string): ChildProcess {
  // exec: the process itself, not a shell around it, receives our SIGTERM.
  const child = spawn(`exec ${command}`, { shell: true, stdio: ['ignore', 'inherit', 'inherit'] });
  child.on('exit', (code, signal) => console.error(`[dev] ${name} exited (${signal ?? code})`));
  return child;
}

const release = run('release', processTypes.release!);
const releaseCode = await new Promise<number | null>((resolve) => release.on('exit', (code) => resolve(code)));
if (releaseCode !== 0) process.exit(releaseCode ?? 1);

const config = loadConfig();
const services = await createServices(config, createLogger({ LOG_LEVEL: 'warn' }, 'dev'), 'cli');
const demo = await seedDemo(services);
await services.close();
console.log(`
Demo organization ${demo.orgId}
API key (shown once): ${demo.apiKey.key}
Policy 'refunds': refunds up to 100 are approved at once, everything else waits for review.

  curl -s localhost:${config.PORT}/v1/approvals -H 'authorization: Bearer ${demo.apiKey.key}' \\
    -H 'content-type: application/json' -d '{"action":"refund","payload":{"amount":250},"policyKey":"refunds"}'
`);

const children = Object.entries(processTypes)
  .filter(([name]) => name !== 'release')
  .map(([name, command]) => run(name, command));
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => children.forEach((child) => child.kill('SIGTERM')));
}
