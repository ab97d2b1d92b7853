// The bare BullMQ ceiling of bench/delivery.ts: a Worker, in a child process of its own, with the
// options and concurrency of the webhook-delivery worker, whose processor returns at once.
// It prints one JSON line when ready and one when CEILING_JOBS jobs have completed; with
// CEILING_LATENESS=1 that line also carries each job's start minus the time it was due (its add
// plus its delay), the ceiling of bench/expiry-lateness.ts.
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
const reportLateness = process.env.CEILING_LATENESS === '1';
const latenessMs: number[] = [];
const worker = new Worker(
  env('CEILING_QUEUE'),
  async (job) => {
    const startedAt = now();
    firstStartedAt ??= startedAt;
    if (reportLateness) latenessMs.push(startedAt - (job.timestamp + (job.opts.delay ?? 0)));
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
  if (++completed === expected) say({ done: now(), firstStartedAt, completed, ...(reportLateness ? { latenessMs } : {}) });
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
