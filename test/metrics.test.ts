import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/http/app.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { freePort } from './support/listen.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const TOKEN = 'metrics-token-0123456789';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let receiver: Receiver;
let workerPort: number;

beforeAll(async () => {
  workerPort = await freePort();
  env = await createTestEnv({
    METRICS_TOKEN: TOKEN,
    METRICS_PORT: String(workerPort),
    WEBHOOK_BACKOFF_SCALE: '0.001',
    OUTBOX_POLL_INTERVAL_MS: '100',
  });
  org = await env.createOrg();
  receiver = await startReceiver();
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'webhook-delivery', 'approval-expiry']);
});
afterAll(async () => {
  await worker.stop();
  await receiver.close();
  await env.close();
});

/** One sample's value in a Prometheus text exposition, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const line = text
    .split('\n')
    .find(
      (candidate) =>
        candidate.startsWith(`${name}{`) && Object.entries(labels).every(([key, value]) => candidate.includes(`${key}="${value}"`)),
    );
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('GET /metrics', () => {
  it('refuses a scrape without the token, or with another one', async () => {
    const missing = await env.http.get('/metrics').expect(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    await env.http.get('/metrics').set('authorization', 'Bearer not-the-token-at-all').expect(401);
    await env.http.get('/metrics').set('authorization', `Bearer ${org.key}`).expect(401);
  });

  it('is not mounted without METRICS_TOKEN', async () => {
    const app = createApp({ ...env.services, config: { ...env.config, METRICS_TOKEN: undefined } });
    await supertest(app).get('/metrics').set('authorization', `Bearer ${TOKEN}`).expect(404);
  });

  it('exposes requests, approvals, decisions, queues, webhook attempts, outbox lag, expiry lateness and long-poll waiters', async () => {
    await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 1 }).expect(200);
    await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
    await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/hook'), events: ['approval.approved', 'approval.expired'] })
      .expect(201);
    await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200);
    const pending = await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'review' }).expect(201);
    await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'nothing' }).expect(201);
    const expiring = await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'review' }).expect(201);
    await org.asReviewer('post', `/v1/approvals/${pending.body.id}/decision`).send({ verdict: 'approved' }).expect(200);
    await org.request('get', `/v1/approvals/${expiring.body.id}?wait=5`).expect(200);
    await receiver.waitFor((deliveries) => deliveries.length >= 3);

    // An attempt is counted when it ends; its job is counted completed a moment later, when BullMQ
    // has moved it: wait for both.
    const text = await eventually(async () => {
      const scraped = (await env.http.get('/metrics').set('authorization', `Bearer ${TOKEN}`).expect(200)).text;
      const succeeded = sample(scraped, 'approval_gate_webhook_attempts_total', { result: 'succeeded' }) ?? 0;
      const completed = sample(scraped, 'approval_gate_queue_jobs', { queue: 'webhook-delivery', state: 'completed' }) ?? 0;
      return succeeded >= 3 && completed >= 3 ? scraped : null;
    });
    expect(sample(text, 'approval_gate_http_requests_total', { route: '/v1/approvals', method: 'POST', status: '200' })).toBe(1);
    expect(sample(text, 'approval_gate_http_requests_total', { route: '/v1/approvals/:id/decision', status: '200' })).toBe(1);
    expect(sample(text, 'approval_gate_http_request_duration_seconds_count', { route: '/v1/approvals', status: '201' })).toBe(3);
    expect(sample(text, 'approval_gate_approvals_created_total', { outcome: 'approved' })).toBe(1);
    expect(sample(text, 'approval_gate_approvals_created_total', { outcome: 'pending' })).toBe(2);
    expect(sample(text, 'approval_gate_approvals_created_total', { outcome: 'orphaned' })).toBe(1);
    expect(sample(text, 'approval_gate_decisions_total', { channel: 'api', verdict: 'approved', settled: 'true' })).toBe(1);
    expect(sample(text, 'approval_gate_queue_jobs', { queue: 'webhook-delivery', state: 'completed' })).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'approval_gate_webhook_attempt_duration_seconds_count', { result: 'succeeded' })).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'approval_gate_outbox_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'approval_gate_expiry_lateness_seconds_count')).toBe(1);
    expect(sample(text, 'approval_gate_long_poll_waiters')).toBe(0);
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toMatch(/process="web"/);
  });

  it('is served by a worker process on METRICS_PORT, with the same token', async () => {
    const url = `http://127.0.0.1:${workerPort}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(sample(text, 'approval_gate_jobs_total', { queue: 'webhook-delivery', result: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(text).toContain('approval_gate_queue_jobs');
  });
});
