import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveryJob } from '../src/consumers/webhooks/webhook-delivery.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

let env: TestEnv;
let org: TestOrg;
let receiver: Receiver;
const runtimes: WorkerRuntime[] = [];

beforeAll(async () => {
  env = await createTestEnv({ DELIVERY_STALLED_GRACE_MS: '1', DELIVERY_SWEEP_INTERVAL_MS: '200' });
  receiver = await startReceiver();
  org = await env.createOrg();
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
  await org
    .request('post', '/v1/webhooks')
    .send({ url: receiver.url('/sweep'), events: ['approval.approved'] })
    .expect(201);
});
afterAll(async () => {
  for (const runtime of runtimes) await runtime.stop();
  await receiver.close();
  await env.close();
});

/**
 * A worker takes the job and stops answering (killed, or starved of CPU as in the soak), twice:
 * BullMQ's stalled-job check then marks the job to fail, and the next worker to fetch it fails it
 * for good without running it, keeping it a week under its id.
 */
async function stallTwice(jobId: string): Promise<void> {
  const queue = env.services.jobs.queue(webhookDeliveryJob);
  const options = { connection: { host: '127.0.0.1', port: 6379 }, prefix: env.config.REDIS_PREFIX, autorun: false };
  const dying = new Worker(webhookDeliveryJob.queue, null, { ...options, lockDuration: 100 });
  const checker = new Worker(webhookDeliveryJob.queue, null, { ...options, stalledInterval: 100 });
  try {
    await eventually(async () => {
      const job = await queue.getJob(jobId);
      if (job!.stalledCounter >= 2) return true;
      if ((await job!.getState()) === 'waiting') expect((await dying.getNextJob(`dying-${Date.now()}`))?.id).toBe(jobId);
      await sleep(150);
      // The check a running worker makes every stalledInterval, made here on demand.
      await (checker as unknown as { moveStalledJobsToWait(): Promise<unknown> }).moveStalledJobsToWait();
      return false;
    });
  } finally {
    await Promise.all([dying.close(true), checker.close(true)]);
  }
}

describe('the delivery sweeper', () => {
  it('delivers a first attempt whose job failed for good without an attempt (the soak’s deliveries left pending)', async () => {
    // Only the relay runs: the delivery is made and its first attempt queued, but nobody runs it.
    runtimes.push(await startWorkerRuntime(env.services, ['outbox-relay']));
    await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200);
    const delivery = await eventually(() => env.services.db.webhookDelivery.findFirst({ where: { orgId: org.orgId } }));
    const jobId = `${delivery.id}-1`;
    await eventually(async () => (await env.services.jobs.queue(webhookDeliveryJob).getJobState(jobId)) === 'waiting');

    await stallTwice(jobId);
    expect(await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).toMatchObject({
      status: 'pending',
      attemptCount: 0,
    });

    runtimes.push(await startWorkerRuntime(env.services, ['webhook-delivery', 'maintenance']));
    await receiver.waitFor(() => receiver.at('/sweep').length === 1);
    expect(receiver.at('/sweep')[0]!.headers['x-service-webhook-id']).toBe(delivery.id);
    await eventually(
      async () => (await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).status === 'succeeded',
    );
    // The stalled job was failed for good before the sweeper queued the attempt again under its id.
    expect(env.logs.some((line) => line.msg === 'job failed' && line.jobId === jobId)).toBe(true);
  });
});
