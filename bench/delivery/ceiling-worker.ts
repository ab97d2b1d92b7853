// The bare BullMQ ceiling of bench/delivery.ts: a Worker, in a child process of its own, with the
// options and concurrency of the webhook-delivery worker, whose processor returns at once.
// It prints one JSON line when ready and one when CEILING_JOBS jobs have completed.
import { performance } from 'node:perf_hooks';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const expected = Number(env('CEILING_JOBS'));
const lockMs = Number(env('CEILING_LOCK_DURATION_MS'));
const now = () => performance.timeOrigin + performance.now();
const say = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

const connection = new Redis(env('REDIS_URL'), { maxRetriesPerRequest: null, connectionName: 'bench:ceiling-worker' });
let firstStartedAt: number | undefined;
let completed = 0;
const worker = new Worker(
  env('CEILING_QUEUE'),
  async () => {
    firstStartedAt ??= now();
    return 'ok';
  },
  {
    connection,
    prefix: env('CEILING_PREFIX'),
    concurrency: Number(env('CEILING_CONCURRENCY')),
    lockDuration: lockMs,
    stalledInterval: lockMs,
  },
);
worker.on('completed', () => {
  if (++completed === expected) say({ done: now(), firstStartedAt, completed });
});
worker.on('error', (error) => console.error(`ceiling worker error: ${String(error)}`));
await worker.waitUntilReady();
say({ ready: true });

process.on('SIGTERM', () => {
  void worker
    .close()
    .catch(() => undefined)
    .finally(() => {
      connection.disconnect();
      process.exit(0);
    });
});
