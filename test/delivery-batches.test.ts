import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { webhookDeliveryJob } from '../src/consumers/webhooks/webhook-delivery.js';
import { withTimeout } from '../src/lib/time.js';
import { eventually } from './support/eventually.js';
import { listenOnLoopback } from './support/listen.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver } from './support/webhook-receiver.js';
import { spawnWorker } from './support/worker-process.js';

// First attempts go out many to a job (see webhookConsumer.plan). These run the worker as processes
// of their own, which a test can kill, or run two of side by side.
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 120_000);

async function setUp(): Promise<{ env: TestEnv; org: TestOrg }> {
  const env = await createTestEnv({ WEBHOOK_BACKOFF_SCALE: '0.001' });
  cleanups.push(() => env.close());
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 3600 }).expect(200);
  return { env, org };
}

async function approve(org: TestOrg, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'review' }).expect(201);
    ids.push(created.body.id as string);
  }
  await Promise.all(ids.map((id) => org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200)));
  return ids;
}

/** The worker ids (BullMQ's, the first part of a job's lock token) holding the delivery jobs running now. */
async function workersRunningDeliveries(env: TestEnv): Promise<Set<string>> {
  const queue = env.services.jobs.queue(webhookDeliveryJob);
  const active = await queue.getActive();
  const tokens = await Promise.all(
    active.map((job) => env.services.redis.get(`${env.config.REDIS_PREFIX}:${webhookDeliveryJob.queue}:${job.id}:lock`)),
  );
  return new Set(tokens.filter((token): token is string => token !== null).map((token) => token.split(':')[0]!));
}

describe('first attempts many to a job', () => {
  it('delivers each delivery of a job killed mid-way, under its one delivery id, without resending what was recorded', async () => {
    const { env, org } = await setUp();
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const paths = ['/a', '/b', '/c', '/d', '/e', '/f'];
    const hanging = new Set(['/a', '/b', '/c']);
    for (const path of paths) {
      await org
        .request('post', '/v1/webhooks')
        .send({ url: receiver.url(path), events: ['approval.approved'] })
        .expect(201);
      // Hangs only while the first worker lives: the attempts it cuts short are made again.
      if (hanging.has(path)) receiver.respond(path, (_delivery, n) => (n === 1 ? 'hang' : { status: 200 }));
    }

    const first = await spawnWorker(env, cleanups, ['outbox-relay', 'webhook-delivery']);
    const [approvalId] = await approve(org, 1);
    // One job holds the six first attempts: three answered and recorded, three hanging.
    await receiver.waitFor((received) => received.length === paths.length);
    const settled = () => env.services.db.webhookDelivery.count({ where: { orgId: org.orgId, status: 'succeeded' } });
    await eventually(async () => (await settled()) === 3);
    const active = await env.services.jobs.queue(webhookDeliveryJob).getActive();
    expect(active.map((job) => job.data)).toEqual([{ firstAttempts: expect.any(Array) }]);
    expect(active[0]!.data.firstAttempts).toHaveLength(paths.length);
    first.kill('SIGKILL');
    await once(first, 'exit');

    await spawnWorker(env, cleanups, ['outbox-relay', 'webhook-delivery']);
    await eventually(async () => (await settled()) === paths.length, 20_000);
    for (const path of paths) {
      const deliveries = receiver.at(path);
      expect(deliveries).toHaveLength(hanging.has(path) ? 2 : 1);
      expect(new Set(deliveries.map((delivery) => delivery.body.data.approvalId))).toEqual(new Set([approvalId]));
      expect(new Set(deliveries.map((delivery) => delivery.headers['x-service-webhook-id'])).size).toBe(1);
    }
    const rows = await env.services.db.webhookDelivery.findMany({ where: { orgId: org.orgId }, include: { attempts: true } });
    expect(rows.map((row) => [row.attemptCount, row.attempts.length])).toEqual(paths.map(() => [1, 1]));
  }, 120_000);

  it("holds an endpoint's concurrency limit across two worker processes", async () => {
    const { env, org } = await setUp();
    let inFlight = 0;
    let mostInFlight = 0;
    const received: string[] = [];
    const server = http.createServer((req, res) => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push(JSON.parse(Buffer.concat(chunks).toString()).data.approvalId as string);
        setTimeout(() => {
          inFlight--;
          res.writeHead(204).end();
        }, 40);
      });
    });
    const port = await listenOnLoopback(server);
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${port}/slow`;
    await org
      .request('post', '/v1/webhooks')
      .send({ url, events: ['approval.approved'] })
      .expect(201);

    // Each process may run 4 attempts at once, so together they could put 8 on the endpoint.
    const limits = { WEBHOOK_ENDPOINT_CONCURRENCY: '3', WEBHOOK_DELIVERY_CONCURRENCY: '4' };
    const workers: ChildProcess[] = [await spawnWorker(env, cleanups, ['webhook-delivery'], limits)];
    const ids = await approve(org, 60);
    workers.push(await spawnWorker(env, cleanups, ['outbox-relay', 'webhook-delivery'], limits));

    const seen = new Set<string>();
    await eventually(async () => {
      for (const worker of await workersRunningDeliveries(env)) seen.add(worker);
      return received.length >= ids.length;
    }, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.size).toBe(2);
    expect(mostInFlight).toBe(3);
    expect(received.sort()).toEqual(ids.sort());
  }, 120_000);
});
