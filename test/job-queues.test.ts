import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../src/jobs/job.js';
import { JobQueues } from '../src/jobs/job-queues.js';
import { createLogger } from '../src/lib/logger.js';
import { eventually } from './support/eventually.js';

const REDIS = { host: '127.0.0.1', port: 6379 };
const prefix = `agtest-jobs-${randomBytes(6).toString('hex')}`;

/** A job with a deterministic id that fails when told to; attempts 1, so a failure is for good. */
const probeJob = defineJob<{ key: string; fail: boolean }>({
  queue: 'probe',
  payload: z.object({ key: z.string(), fail: z.boolean() }),
  options: { attempts: 1, backoff: { type: 'fixed', delay: 10 }, concurrency: () => 1 },
  jobId: ({ key }) => `probe-${key}`,
});

let producer: Redis;
let jobs: JobQueues;
let worker: Worker;
const runs: string[] = [];
const runsOf = (key: string) => runs.filter((run) => run === key).length;
/** The state of the job under `key`'s id, as BullMQ reports it ('unknown' when there is none). */
const stateOf = async (key: string) => (await jobs.queue(probeJob).getJobState(`probe-${key}`)) as string;

beforeAll(async () => {
  producer = new Redis(REDIS);
  jobs = new JobQueues(producer, prefix, createLogger({ LOG_LEVEL: 'silent', NODE_ENV: 'test' }, 'job-queues-test'), [probeJob]);
  worker = new Worker(
    probeJob.queue,
    async (job) => {
      runs.push(job.data.key);
      if (job.data.fail) throw new Error('failing on purpose');
    },
    { connection: REDIS, prefix },
  );
});
afterAll(async () => {
  await worker.close();
  await jobs.queue(probeJob).obliterate({ force: true });
  await jobs.close();
  await producer.quit();
});

describe('JobQueues.rerun', () => {
  it('runs a job again whose earlier run under the same id completed, where adding it is dropped', async () => {
    await jobs.add(probeJob, { key: 'completed', fail: false });
    await eventually(async () => (await stateOf('completed')) === 'completed');
    await jobs.add(probeJob, { key: 'completed', fail: false });
    await sleep(300);
    expect(runsOf('completed')).toBe(1);

    await jobs.rerun(probeJob, { key: 'completed', fail: false });
    await eventually(() => runsOf('completed') === 2);
  });

  it('runs a job again whose earlier run under the same id failed for good', async () => {
    await jobs.add(probeJob, { key: 'failed', fail: true });
    await eventually(async () => (await stateOf('failed')) === 'failed');
    await jobs.rerun(probeJob, { key: 'failed', fail: true });
    await eventually(() => runsOf('failed') === 2);
  });

  it('runs a delayed job now, once, and leaves a delayed one delayed when asked for a delay', async () => {
    await jobs.add(probeJob, { key: 'delayed', fail: false }, 60_000);
    await jobs.rerun(probeJob, { key: 'delayed', fail: false }, 30_000);
    await sleep(300);
    expect(await stateOf('delayed')).toBe('delayed');
    await jobs.rerun(probeJob, { key: 'delayed', fail: false });
    await eventually(() => runsOf('delayed') === 1);
    await sleep(300);
    expect(runsOf('delayed')).toBe(1);
  });

  it('adds a job never seen, after a delay when asked', async () => {
    await jobs.rerun(probeJob, { key: 'new', fail: false }, 200);
    expect(await stateOf('new')).toBe('delayed');
    await eventually(() => runsOf('new') === 1);
  });
});
