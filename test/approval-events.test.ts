import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { openStream } from './support/event-stream.js';
import { createMember } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;

beforeAll(async () => {
  env = await createTestEnv({ OUTBOX_POLL_INTERVAL_MS: '100', EVENT_STREAM_HEARTBEAT_MS: '200' });
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  worker = await startWorkerRuntime(env.services, ['outbox-relay']);
});
afterAll(async () => {
  await worker.stop();
  await env.close();
});

const bearer = () => ({ authorization: `Bearer ${org.key}` });

describe('GET /v1/approvals/events', () => {
  it('streams approval events as they commit, from any process, within the 2 s the console promises', async () => {
    const stream = await openStream(env.baseUrl, bearer());
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    try {
      const peer = await env.createPeer();
      const started = Date.now();
      const created = await peer.http
        .post('/v1/approvals')
        .set(bearer())
        .send({ action: 'pay', payload: {}, policyKey: 'review' })
        .expect(201);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === created.body.id && m.data.type === 'approval.created'));
      const decided = Date.now();
      await peer.http
        .post(`/v1/approvals/${created.body.id}/decision`)
        .set({ authorization: `Bearer ${org.reviewerKey}` })
        .send({ verdict: 'rejected' })
        .expect(200);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === created.body.id && m.data.status === 'rejected'));
      expect(Date.now() - decided).toBeLessThan(2000);
      expect(decided - started).toBeLessThan(2000);
      const [createdEvent, rejectedEvent] = stream.messages.filter((m) => m.data.approvalId === created.body.id);
      expect(createdEvent).toMatchObject({ event: 'approval', data: { type: 'approval.created', status: 'pending' } });
      expect(rejectedEvent).toMatchObject({ event: 'approval', id: String(rejectedEvent!.data.seq), data: { type: 'approval.rejected' } });
    } finally {
      await stream.close();
    }
  });

  it('replays what a reconnecting client missed, from its Last-Event-ID, without repeating what it saw', async () => {
    const first = await openStream(env.baseUrl, bearer());
    const a = await org.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'review' }).expect(201);
    await first.waitFor((messages) => messages.some((m) => m.data.approvalId === a.body.id));
    const lastSeen = first.messages.at(-1)!.id!;
    await first.close();

    const missed = await org.request('post', '/v1/approvals').send({ action: 'b', payload: {}, policyKey: 'review' }).expect(201);
    await org.asReviewer('post', `/v1/approvals/${missed.body.id}/decision`).send({ verdict: 'approved' }).expect(200);
    const resumed = await openStream(env.baseUrl, { ...bearer(), 'last-event-id': lastSeen });
    try {
      await resumed.waitFor((messages) => messages.some((m) => m.data.approvalId === missed.body.id && m.data.status === 'approved'));
      expect(resumed.messages.map((m) => m.data.approvalId)).not.toContain(a.body.id);
      expect(resumed.messages.map((m) => Number(m.id))).toEqual([...resumed.messages.map((m) => Number(m.id))].sort((x, y) => x - y));
    } finally {
      await resumed.close();
    }
  });

  it('hands on an event that arrives after one with a higher seq, as relays publishing side by side deliver them, and each once', async () => {
    const stream = await openStream(env.baseUrl, bearer());
    try {
      const created = await org.request('post', '/v1/approvals').send({ action: 'late', payload: {}, policyKey: 'review' }).expect(201);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === created.body.id));
      const seq = Number(stream.messages.at(-1)!.id);
      const event = (offset: number, approvalId: string) => ({
        id: randomUUID(),
        type: 'approval.created' as const,
        orgId: org.orgId,
        seq: seq + offset,
        actor: null,
        createdAt: new Date(),
        data: { approvalId, status: 'pending' },
      });
      const early: string = randomUUID();
      const late: string = randomUUID();
      // Two relays' batches: the later commit's is published first.
      await env.services.approvalFeed.publish([event(2, early)]);
      await env.services.approvalFeed.publish([event(1, late)]);
      await env.services.approvalFeed.publish([event(2, early), event(1, late)]);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === late));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const heard = stream.messages.filter((m) => [early, late].includes(m.data.approvalId as string)).map((m) => Number(m.id));
      expect(heard).toEqual([seq + 2, seq + 1]);
    } finally {
      await stream.close();
    }
  });

  it('shows an organization only its own events', async () => {
    const other = await env.createOrg();
    const stream = await openStream(env.baseUrl, { authorization: `Bearer ${other.key}` });
    try {
      const mine = await org.request('post', '/v1/approvals').send({ action: 'secret', payload: {}, policyKey: 'review' }).expect(201);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(stream.messages.map((m) => m.data.approvalId)).not.toContain(mine.body.id);
    } finally {
      await stream.close();
    }
  });

  it('ends a stream whose session ends or whose key is revoked, at its next heartbeat', async () => {
    const member = await createMember(env, org, 'reviewer');
    const signedIn = await env.http.post('/v1/session').send({ email: member.email, password: member.password }).expect(200);
    const cookie = (signedIn.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
    const bySession = await openStream(env.baseUrl, { cookie });
    const key = await env.createKey(org.orgId, ['approvals:read']);
    const byKey = await openStream(env.baseUrl, { authorization: `Bearer ${key.key}` });
    await org.request('delete', `/v1/members/${member.id}`).expect(204);
    await env.services.orgs.revokeApiKey(key.id);
    await Promise.all([bySession.ended, byKey.ended]);
  });

  it('works with a console session, and needs approvals:read', async () => {
    const viewer = await createMember(env, org, 'viewer');
    const signedIn = await env.http.post('/v1/session').send({ email: viewer.email, password: viewer.password }).expect(200);
    const cookie = (signedIn.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
    const stream = await openStream(env.baseUrl, { cookie });
    try {
      expect(stream.response.status).toBe(200);
      const created = await org.request('post', '/v1/approvals').send({ action: 'seen', payload: {}, policyKey: 'review' }).expect(201);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === created.body.id));
    } finally {
      await stream.close();
    }
    const writer = await env.createKey(org.orgId, ['approvals:write']);
    const refused = await fetch(`${env.baseUrl}/v1/approvals/events`, { headers: { authorization: `Bearer ${writer.key}` } });
    expect(refused.status).toBe(403);
    expect((await fetch(`${env.baseUrl}/v1/approvals/events`)).status).toBe(401);
  });
});
