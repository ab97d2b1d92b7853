import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveryJob } from '../src/consumers/webhooks/webhook-delivery.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { listenOnLoopback } from './support/listen.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let server: http.Server;
const received: string[] = [];

beforeAll(async () => {
  env = await createTestEnv({ WEBHOOK_ENDPOINT_CONCURRENCY: '3', WEBHOOK_DELIVERY_CONCURRENCY: '30' });
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 3600 }).expect(200);
  // A healthy endpoint that takes 40 ms an answer: thirty deliveries through three slots take 400 ms.
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString()).data.approvalId as string);
      setTimeout(() => res.writeHead(204).end(), 40);
    });
  });
  const port = await listenOnLoopback(server);
  await org
    .request('post', '/v1/webhooks')
    .send({ url: `http://127.0.0.1:${port}/busy`, events: ['approval.approved'] })
    .expect(201);
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await env.close();
});

describe('first attempts of one job to one endpoint', () => {
  it('take turns at the endpoint’s limit instead of stepping aside as delayed jobs of their own', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      ids.push((await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'review' }).expect(201)).body.id);
    }
    await Promise.all(ids.map((id) => org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200)));

    // Started after the decisions, the relay hands all thirty over in one pass: one job of thirty.
    const worker: WorkerRuntime = await startWorkerRuntime(env.services, ['outbox-relay', 'webhook-delivery']);
    try {
      await eventually(() => received.length >= ids.length, 20_000);
      const queue = env.services.jobs.queue(webhookDeliveryJob);
      const [job] = await eventually(async () => {
        const completed = await queue.getCompleted();
        return completed.length > 0 ? completed : null;
      });
      expect(job!.returnvalue).toEqual({ succeeded: 30 });
      expect(await queue.getJobCounts('completed', 'delayed', 'waiting', 'active')).toEqual({
        completed: 1,
        delayed: 0,
        waiting: 0,
        active: 0,
      });
      expect(received.sort()).toEqual(ids.sort());
    } finally {
      await worker.stop();
    }
  });
});
