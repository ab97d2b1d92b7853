import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { TestEnv } from './test-env.js';

/**
 * A worker process of its own (test/support/recording-worker.ts: the real consumers plus the
 * recording one) on the env's database and Redis prefix, which a test can kill with SIGKILL.
 * Its stop is registered in `cleanups`.
 */
export function spawnWorker(
  env: TestEnv,
  cleanups: (() => Promise<unknown>)[],
  roles: string[],
  extraEnv: Record<string, string> = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/recording-worker.ts', roles.join(',')], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      DATABASE_URL: env.config.DATABASE_URL,
      REDIS_PREFIX: env.config.REDIS_PREFIX,
      OUTBOX_POLL_INTERVAL_MS: '100',
      OUTBOX_LEASE_MS: '2000',
      WORKER_LOCK_DURATION_MS: '1000',
      RECORDING_DELAY_MS: '20',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('recording worker ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}
