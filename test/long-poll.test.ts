import http from 'node:http';
import type { Request } from 'express';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { readSettlementMessage } from '../src/modules/approvals/approval-settlements.js';
import { createServices } from '../src/services.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { eventually } from './support/eventually.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const createPending = async () =>
  (await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'none' }).expect(201)).body as { id: string };

describe('GET /v1/approvals/:id?wait=N', () => {
  it('answers within 200 ms of a decision made through another app instance', async () => {
    const peer = await env.createPeer();
    const approval = await createPending();

    let answeredAt = 0;
    const waiting = org.request('get', `/v1/approvals/${approval.id}?wait=10`).then((res) => {
      answeredAt = performance.now();
      return res;
    });
    await eventually(() => env.services.settlements.waiting === 1);

    await peer.http
      .post(`/v1/approvals/${approval.id}/decision`)
      .set('authorization', `Bearer ${org.reviewerKey}`)
      .send({ verdict: 'approved', feedback: 'go' })
      .expect(200);
    const decidedAt = performance.now();

    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: approval.id, status: 'approved', feedback: 'go' });
    expect(answeredAt - decidedAt).toBeLessThan(200);
    expect(env.services.settlements.waiting).toBe(0);
  });

  it('returns the pending state after the wait runs out', async () => {
    const approval = await createPending();
    const started = performance.now();
    const res = await org.request('get', `/v1/approvals/${approval.id}?wait=1`).expect(200);
    const elapsed = performance.now() - started;
    expect(res.body.status).toBe('pending');
    expect(elapsed).toBeGreaterThanOrEqual(990);
    expect(elapsed).toBeLessThan(1500);
  });

  it('runs each wait out at its own length while waits of one length share a timer', async () => {
    const approval = await createPending();
    const timed = async (wait: number) => {
      const started = performance.now();
      const res = await org.request('get', `/v1/approvals/${approval.id}?wait=${wait}`).expect(200);
      return { status: res.body.status as string, elapsed: performance.now() - started };
    };
    const later = (ms: number, wait: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)).then(() => timed(wait));
    const outcomes = await Promise.all([timed(2), timed(1), later(300, 1), later(600, 1)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['pending', 'pending', 'pending', 'pending']);
    const [two, ...ones] = outcomes.map((outcome) => outcome.elapsed);
    expect(two).toBeGreaterThanOrEqual(1990);
    expect(two).toBeLessThan(2500);
    for (const one of ones) {
      expect(one).toBeGreaterThanOrEqual(990);
      expect(one).toBeLessThan(1500);
    }
    expect(env.services.settlements.waiting).toBe(0);
  });

  it('answers at once when the approval is already settled', async () => {
    const approval = await createPending();
    await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'rejected' }).expect(200);
    const started = performance.now();
    const res = await org.request('get', `/v1/approvals/${approval.id}?wait=30`).expect(200);
    expect(res.body.status).toBe('rejected');
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('answers 404 at once for an unknown or foreign approval', async () => {
    const other = await env.createOrg();
    const theirs = (await other.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'none' }).expect(201)).body;
    await org.request('get', `/v1/approvals/${theirs.id}?wait=30`).expect(404);
    expect(env.services.settlements.waiting).toBe(0);
  });

  it('stops waiting when the client goes away', async () => {
    const approval = await createPending();
    const request = http.get(`${env.baseUrl}/v1/approvals/${approval.id}?wait=30`, { headers: { authorization: `Bearer ${org.key}` } });
    request.on('error', () => {});
    await eventually(() => env.services.settlements.waiting === 1);
    request.destroy();
    await eventually(() => env.services.settlements.waiting === 0);
  });

  it('keeps no continuation of the router on a waiting request', async () => {
    const approval = await createPending();
    const requests: Request[] = [];
    const watch = (req: Request) => requests.push(req);
    env.server.on('request', watch);
    try {
      const request = http.get(`${env.baseUrl}/v1/approvals/${approval.id}?wait=30`, { headers: { authorization: `Bearer ${org.key}` } });
      request.on('error', () => {});
      await eventually(() => env.services.settlements.waiting === 1);
      // The router's next step, and with it every closure the router made for the request, would be
      // held for the whole wait.
      expect(requests).toHaveLength(1);
      expect(requests[0]!.next).toBeUndefined();
      request.destroy();
      await eventually(() => env.services.settlements.waiting === 0);
    } finally {
      env.server.off('request', watch);
    }
  });

  it('wakes many waiters on one approval at once', async () => {
    const approval = await createPending();
    const waiters = Array.from({ length: 25 }, () => org.request('get', `/v1/approvals/${approval.id}?wait=10`));
    const all = Promise.all(waiters);
    await eventually(() => env.services.settlements.waiting === 25);
    await org.asReviewer('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const answers = await all;
    expect(answers.every((res) => res.status === 200 && res.body.status === 'approved')).toBe(true);
  });

  /** The approval ids of every message on the settlements channel, as another process's subscriber receives them. */
  async function listenToSettlements() {
    const listener = new Redis(env.config.REDIS_URL.url);
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => messages.push(readSettlementMessage('v2', message).join(',')));
    await listener.subscribe(`${env.config.REDIS_PREFIX}:approvals:settled:v2`);
    return { messages, stop: () => listener.quit() };
  }

  it('sends the settlements of one turn as one message that wakes each of their waiters', async () => {
    const { messages, stop } = await listenToSettlements();
    try {
      const ids = ['a1', 'a2', 'a3'];
      const present = { gone: false, onGone: () => {} };
      const watches = ids.map((id) => env.services.settlements.watch(id));
      const woken = watches.map((watch) => watch.wait(10_000, present));

      for (const id of ids) env.services.settlements.publish(id);
      await Promise.all(woken);
      watches.forEach((watch) => watch.release());

      expect(messages).toEqual(['a1,a2,a3']);
    } finally {
      await stop();
    }
  });

  it('sends a settlement announced in the turn a shutdown starts before it closes Redis', async () => {
    const { messages, stop } = await listenToSettlements();
    try {
      const worker = await createServices(env.config, env.services.logger, 'worker');
      await eventually(async () => (await worker.checkReadiness()).redis);
      worker.settlements.publish('last');
      await worker.close();
      await eventually(() => messages.includes('last'));
    } finally {
      await stop();
    }
  });
});
