import { afterEach, describe, expect, it } from 'vitest';
import { withTimeout } from '../src/lib/time.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { startTcpProxy } from './support/tcp-proxy.js';
import { createTestEnv } from './support/test-env.js';
import { startReceiver } from './support/webhook-receiver.js';
import { eventually } from './support/eventually.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 120_000);

/** An app whose every database connection goes through a proxy the test can break. */
async function setUp(overrides: Record<string, string> = {}) {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  cleanups.push(() => proxy.close());
  const env = await createTestEnv(
    { OUTBOX_POLL_INTERVAL_MS: '200', WEBHOOK_BACKOFF_SCALE: '0.001', ...overrides },
    { databasePort: proxy.port },
  );
  cleanups.push(() => env.close());
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
  return { proxy, env, org };
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await work;
  return { value, ms: Date.now() - started };
}

describe('PostgreSQL unreachable', () => {
  for (const outage of ['refuse', 'freeze'] as const) {
    it(`answers 503 unavailable with retry-after within 5 s while the database is ${outage === 'refuse' ? 'down' : 'frozen'}, and recovers by itself`, async () => {
      const { proxy, env, org } = await setUp();
      proxy[outage]();

      const created = await timed(org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'review' }));
      expect(created.value.status).toBe(503);
      expect(created.ms).toBeLessThan(5000);
      expect(created.value.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(created.value.headers['retry-after']).toBe('5');
      expect(created.value.body).toMatchObject({ status: 503, code: 'unavailable' });
      expect(JSON.stringify(created.value.body)).not.toMatch(/ECONN|terminated|pg-pool|at /);

      const read = await timed(org.request('get', '/v1/policies'));
      expect(read.value.status).toBe(503);
      expect(read.ms).toBeLessThan(5000);
      const ready = await timed(env.http.get('/readyz'));
      expect(ready.value.status).toBe(503);
      expect(ready.value.body).toMatchObject({ checks: { postgres: false, redis: true } });
      expect(ready.ms).toBeLessThan(2000);
      await env.http.get('/healthz').expect(200);

      proxy.restore();
      // No restart: the pool connects again on the next request.
      await eventually(async () => (await env.http.get('/readyz')).status === 200);
      await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'review' }).expect(201);
    }, 30_000);
  }

  it('loses no committed change’s webhook and delivers each once, by event id, across an outage', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const { proxy, env, org } = await setUp();
    await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/hook'), events: ['approval.approved'] })
      .expect(201);
    const before = await Promise.all(
      Array.from(
        { length: 10 },
        async () =>
          (await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200)).body.id,
      ),
    );

    proxy.freeze();
    const worker = await startWorkerRuntime(env.services, ['outbox-relay', 'webhook-delivery', 'maintenance']);
    cleanups.push(() => worker.stop());
    await new Promise((resolve) => setTimeout(resolve, 3000));
    proxy.restore();

    const after = await Promise.all(
      Array.from(
        { length: 5 },
        async () =>
          (await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200)).body.id,
      ),
    );
    const expected = [...before, ...after];
    await receiver.waitFor((deliveries) => expected.every((id) => deliveries.some((d) => d.body.data.approvalId === id)), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ids = receiver.at('/hook').map((delivery) => delivery.body.id as string);
    // At least once: a retry repeats an event id, never a new one for the same change.
    expect(new Set(ids).size).toBe(expected.length);
  }, 120_000);
});
