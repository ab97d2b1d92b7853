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
