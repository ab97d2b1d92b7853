import { randomUUID } from 'node:crypto';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/http/app.js';
import { approvalExpiryJob } from '../src/jobs/approval-expiry.js';
import { JOBS } from '../src/services.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

const USER = 'ops';
// A colon in the password: basic auth splits at the first one only.
const PASSWORD = 'correct:horse battery';

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ ADMIN_USER: USER, ADMIN_PASSWORD: PASSWORD });
});
afterAll(() => env.close());

interface BoardQueue {
  name: string;
  counts: Record<string, number>;
  readOnlyMode: boolean;
  jobs: { id: string; data: unknown }[];
}

describe('/admin/queues', () => {
  it('asks for basic auth without credentials, for the page and its API alike', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const res = await env.http.get(path).expect(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="Approval Gate queues"');
    }
  });

  it('refuses a wrong password, a wrong user and a bearer token', async () => {
    await env.http.get('/admin/queues').auth(USER, 'correct').expect(401);
    await env.http.get('/admin/queues').auth('admin', PASSWORD).expect(401);
    await env.http.get('/admin/queues').set('authorization', `Bearer ${PASSWORD}`).expect(401);
  });

  it('serves the dashboard with the right credentials', async () => {
    const res = await env.http.get('/admin/queues').auth(USER, PASSWORD).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers).not.toHaveProperty('x-powered-by');
    expect(res.text).toContain('<base href="/admin/queues/" />');
    await env.http.get('/admin/queues/static/images/logo.svg').auth(USER, PASSWORD).expect(200);
  });

  it("lists every queue with its counts in the API the board's UI reads, including a job just added", async () => {
    const approvalId = randomUUID();
    await env.services.jobs.add(approvalExpiryJob, { orgId: randomUUID(), approvalId }, 3_600_000);

    const res = await env.http
      .get('/admin/queues/api/queues')
      .query({ activeQueue: approvalExpiryJob.queue, status: 'delayed' })
      .auth(USER, PASSWORD)
      .expect(200);
    const queues = res.body.queues as BoardQueue[];
    expect(queues.map((queue) => queue.name).sort()).toEqual(JOBS.map((job) => job.queue).sort());
    for (const queue of queues) {
      expect(queue.readOnlyMode).toBe(true);
      expect(queue.counts).toMatchObject({ waiting: expect.any(Number), failed: expect.any(Number) });
    }
    const expiry = queues.find((queue) => queue.name === approvalExpiryJob.queue)!;
    expect(expiry.counts.delayed).toBe(1);
    expect(expiry.jobs).toEqual([
      expect.objectContaining({ id: approvalExpiryJob.jobId!({ orgId: '', approvalId }), data: expect.objectContaining({ approvalId }) }),
    ]);
  });

  it('is read-only: the API refuses to empty a queue', async () => {
    const expiryQueue = env.services.jobs.queue(approvalExpiryJob);
    const before = await expiryQueue.getJobCounts('delayed');
    await env.http.put(`/admin/queues/api/queues/${approvalExpiryJob.queue}/empty`).auth(USER, PASSWORD).expect(405);
    expect(await expiryQueue.getJobCounts('delayed')).toEqual(before);
  });

  it('is not mounted without ADMIN_USER and ADMIN_PASSWORD', async () => {
    const app = createApp({ ...env.services, config: { ...env.config, ADMIN_USER: undefined, ADMIN_PASSWORD: undefined } });
    await supertest(app).get('/admin/queues').auth(USER, PASSWORD).expect(404);
  });
});

describe('/admin/queues under guessing', () => {
  let guarded: TestEnv;
  beforeAll(async () => {
    guarded = await createTestEnv({ ADMIN_USER: USER, ADMIN_PASSWORD: PASSWORD, TRUST_PROXY: '1' });
  });
  afterAll(() => guarded?.close());

  it('allows 10 failures a minute per client address across web processes, then 429 even for the right password', async () => {
    const peer = await guarded.createPeer();
    const address = '203.0.113.20';
    // 14 guesses at once, half to each process: failures are counted atomically, and past the tenth each answer is 429.
    const guesses = await Promise.all(
      Array.from({ length: 14 }, (_, i) =>
        (i % 2 ? guarded.http : peer.http).get('/admin/queues').set('x-forwarded-for', address).auth(USER, `guess-${i}`),
      ),
    );
    const statuses = guesses.map((res) => res.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(4);
    const locked = await guarded.http.get('/admin/queues').set('x-forwarded-for', address).auth(USER, PASSWORD).expect(429);
    expect(locked.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(locked.body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(Number(locked.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(locked.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Another address is not affected; asking for credentials is no failure.
    await guarded.http.get('/admin/queues').set('x-forwarded-for', '203.0.113.21').auth(USER, PASSWORD).expect(200);
    for (let i = 0; i < 12; i++) await guarded.http.get('/admin/queues').set('x-forwarded-for', address).expect(401);
  });

  it('does not count the right credentials: a page and its assets load as often as they are asked for', async () => {
    const address = '203.0.113.22';
    for (let i = 0; i < 9; i++) await guarded.http.get('/admin/queues').set('x-forwarded-for', address).auth(USER, 'wrong').expect(401);
    const loads = await Promise.all(
      Array.from({ length: 30 }, () => guarded.http.get('/admin/queues/api/queues').set('x-forwarded-for', address).auth(USER, PASSWORD)),
    );
    expect(loads.map((res) => res.status).filter((status) => status !== 200)).toEqual([]);
    await guarded.http.get('/admin/queues').set('x-forwarded-for', address).auth(USER, 'wrong').expect(401);
    await guarded.http.get('/admin/queues').set('x-forwarded-for', address).auth(USER, 'wrong').expect(429);
  });
});
