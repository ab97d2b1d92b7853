// Step 1 of bench/delivery.ts: the bare BullMQ ceiling. Trivial jobs with the options of a
// delivery job, added in chunks, run by a worker (child process) whose processor returns at once.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { retention } from '../../src/jobs/job-queues.js';
import { round } from '../lib/figures.js';
import { deleteRedisKeys, HOST, REDIS_URL } from '../lib/fixtures.js';
import { epochMs } from '../lib/proc-stats.js';
import { startNodeProcess } from '../lib/processes.js';
import { log } from '../lib/run.js';
import { cpuMsPer, cpuSnapshot, cpuUse, formatCpu } from './cpu-window.js';
import type { CeilingResult } from './results.js';
import { CEILING_CHUNK, CEILING_JOBS, CEILING_PREFIX, DELIVERY_CONCURRENCY, WORKER_LOCK_DURATION_MS } from './settings.js';

/** What the ceiling worker reports on its stdout, a JSON line at a time. */
export interface CeilingMessage {
  ready?: boolean;
  /** When it completed its jobs (epoch ms), with when the first one started. */
  done?: number;
  firstStartedAt?: number;
  completed?: number;
  /** With `lateness`: each job's start minus the moment it fell due. */
  latenessMs?: number[];
}

/**
 * The ceiling worker (bench/delivery/ceiling-worker.ts, a child process) running `jobs` trivial jobs
 * of `queueName` with `concurrency`, and the queue to add them to; `stop` ends both and removes
 * their keys. Used by the delivery ceiling and by bench/expiry-lateness.ts.
 */
export async function startCeilingWorker(options: {
  queueName: string;
  concurrency: number;
  jobs: number;
  lockDurationMs: number;
  lateness?: boolean;
  onMessage(message: CeilingMessage): void;
}) {
  let ready = false;
  const child = await startNodeProcess({
    label: 'ceiling worker',
    args: ['--import', 'tsx', 'bench/delivery/ceiling-worker.ts'],
    env: {
      REDIS_URL,
      CEILING_PREFIX,
      CEILING_QUEUE: options.queueName,
      CEILING_CONCURRENCY: String(options.concurrency),
      CEILING_JOBS: String(options.jobs),
      CEILING_LOCK_DURATION_MS: String(options.lockDurationMs),
      ...(options.lateness ? { CEILING_LATENESS: '1' } : {}),
    },
    onStdoutLine: (line) => {
      const message = JSON.parse(line) as CeilingMessage;
      if (message.ready) ready = true;
      options.onMessage(message);
    },
    isReady: () => ready,
  });
  const queue = new Queue(options.queueName, {
    connection: { host: HOST, port: 6379 },
    prefix: CEILING_PREFIX,
    defaultJobOptions: retention,
  });
  return {
    child,
    queue,
    async stop() {
      await queue.close();
      await child.stop();
      await deleteRedisKeys(CEILING_PREFIX);
    },
  };
}

export async function measureCeiling(run: number): Promise<CeilingResult> {
  let done: Required<Pick<CeilingMessage, 'done'>> | undefined;
  const { child, queue, stop } = await startCeilingWorker({
    queueName: `ceiling-${run}`,
    concurrency: DELIVERY_CONCURRENCY,
    jobs: CEILING_JOBS,
    lockDurationMs: WORKER_LOCK_DURATION_MS,
    onMessage: (message) => {
      if (message.done) done = { done: message.done };
    },
  });
  try {
    await queue.waitUntilReady();
    const cpuFrom = cpuSnapshot([child]);
    const startedAt = epochMs();
    // The options of a delivery job (src/consumers/webhooks/webhook-delivery.ts), with a trivial processor.
    for (let from = 0; from < CEILING_JOBS; from += CEILING_CHUNK) {
      const chunk = Array.from({ length: Math.min(CEILING_CHUNK, CEILING_JOBS - from) }, () => {
        const deliveryId = randomUUID();
        return {
          name: 'deliver',
          data: { deliveryId, attempt: 1 },
          opts: { jobId: `${deliveryId}-1`, attempts: 5, backoff: { type: 'exponential', delay: 1000 } },
        };
      });
      await queue.addBulk(chunk);
    }
    const addedAt = epochMs();
    const giveUpAt = Date.now() + 300_000;
    while (!done) {
      if (child.exited()) throw new Error(`the ceiling worker exited:\n${child.stderrTail()}`);
      if (Date.now() > giveUpAt) throw new Error('the ceiling worker did not complete its jobs in 300 s');
      await sleep(20);
    }
    const cpuTo = cpuSnapshot([child]);
    const cpu = cpuUse(cpuFrom, cpuTo);
    const cpuMsPerJob = cpuMsPer(cpu, cpuTo.at - cpuFrom.at, CEILING_JOBS, ['bench', 'ceiling worker', 'redis']);
    const seconds = (done.done - startedAt) / 1000;
    const result = {
      jobs: CEILING_JOBS,
      seconds: round(seconds, 2),
      jobsPerS: round(CEILING_JOBS / seconds, 0),
      addSeconds: round((addedAt - startedAt) / 1000, 2),
      cpu,
      cpuMsPerJob,
    };
    log(
      `ceiling: ${CEILING_JOBS} jobs in ${result.seconds} s = ${result.jobsPerS} jobs/s (adds took ${result.addSeconds} s); ${formatCpu(cpu)}`,
    );
    return result;
  } finally {
    await stop();
  }
}
