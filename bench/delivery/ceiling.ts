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

export async function measureCeiling(run: number): Promise<CeilingResult> {
  let ready = false;
  let done: { done: number; firstStartedAt: number; completed: number } | undefined;
  const queueName = `ceiling-${run}`;
  const child = await startNodeProcess({
    label: 'ceiling worker',
    args: ['--import', 'tsx', 'bench/delivery/ceiling-worker.ts'],
    env: {
      REDIS_URL,
      CEILING_PREFIX,
      CEILING_QUEUE: queueName,
      CEILING_CONCURRENCY: String(DELIVERY_CONCURRENCY),
      CEILING_JOBS: String(CEILING_JOBS),
      CEILING_LOCK_DURATION_MS: String(WORKER_LOCK_DURATION_MS),
    },
    onStdoutLine: (line) => {
      const message = JSON.parse(line) as { ready?: boolean; done?: number; firstStartedAt: number; completed: number };
      if (message.ready) ready = true;
      if (message.done) done = message as typeof done;
    },
    isReady: () => ready,
  });
  const queue = new Queue(queueName, { connection: { host: HOST, port: 6379 }, prefix: CEILING_PREFIX, defaultJobOptions: retention });
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
    await queue.close();
    await child.stop();
    await deleteRedisKeys(CEILING_PREFIX);
  }
}
