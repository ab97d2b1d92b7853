import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { openStream } from './support/event-stream.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;

const REPLAY_BOUND = 1000;

beforeAll(async () => {
  env = await createTestEnv({ OUTBOX_POLL_INTERVAL_MS: '100', EVENT_STREAM_HEARTBEAT_MS: '200' });
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  worker = await startWorkerRuntime(env.services, ['outbox-relay']);
  // Some events that are not the feed's between them: the bound counts the feed's events only.
  for (let batch = 0; batch < (REPLAY_BOUND + 50) / 50; batch++) {
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        org
          .request('post', '/v1/approvals')
          .send({ action: `a${batch}-${i}`, payload: {}, policyKey: 'review' })
          .expect(201),
      ),
    );
    await org.request('put', `/v1/policies/p${batch}`).send({}).expect(200);
  }
  // Every event published live already: what a stream gets below is its replay, not the relay catching up.
  await eventually(async () => {
    const [left] = await env.services.sql.query<{ n: string }>(
      null,
      'SELECT count(*) AS n FROM outbox_messages WHERE relayed_at IS NULL',
      [],
    );
    return left!.n === '0';
  }, 60_000);
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await env?.close();
});

/** The seq of every feed event of `org` (all of them approval.created), oldest first. */
async function feedSeqs(): Promise<number[]> {
  const rows = await env.services.sql.query<{ seq: string }>(
    null,
    `SELECT seq FROM audit_events WHERE org_id = $1 AND type = 'approval.created' ORDER BY seq`,
    [org.orgId],
  );
  return rows.map((row) => Number(row.seq));
}

const bearer = (key = org.key) => ({ authorization: `Bearer ${key}` });

describe('GET /v1/approvals/events: replay after Last-Event-ID', () => {
  it('replays the last 1,000 feed events in order from a Last-Event-ID that old, then goes on live', async () => {
    const seqs = await feedSeqs();
    const lastSeen = seqs.at(-REPLAY_BOUND - 1)!;
    const stream = await openStream(env.baseUrl, { ...bearer(), 'last-event-id': String(lastSeen) });
    try {
      expect(stream.response.status).toBe(200);
      await stream.waitFor((messages) => messages.length >= REPLAY_BOUND, 20_000);
      expect(stream.messages.map((m) => Number(m.id))).toEqual(seqs.slice(-REPLAY_BOUND));
      expect(stream.messages.every((m) => m.event === 'approval' && m.data.type === 'approval.created')).toBe(true);

      const live = await org.request('post', '/v1/approvals').send({ action: 'live', payload: {}, policyKey: 'review' }).expect(201);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === live.body.id));
      expect(stream.messages).toHaveLength(REPLAY_BOUND + 1);
    } finally {
      await stream.close();
    }
  });

  it('sends reset instead of replaying when the Last-Event-ID is older than the last 1,000, then goes on live', async () => {
    const tooOld = (await feedSeqs()).at(-REPLAY_BOUND - 1)! - 1;
    const stream = await openStream(env.baseUrl, { ...bearer(), 'last-event-id': String(tooOld) });
    try {
      await stream.waitFor((messages) => messages.length >= 1);
      expect(stream.messages[0]).toMatchObject({ event: 'reset', id: undefined });
      const live = await org.request('post', '/v1/approvals').send({ action: 'after-reset', payload: {}, policyKey: 'review' }).expect(201);
      await stream.waitFor((messages) => messages.some((m) => m.data.approvalId === live.body.id));
      // Nothing older than the reset is replayed after it.
      expect(stream.messages.map((m) => m.event)).toEqual(['reset', 'approval']);
    } finally {
      await stream.close();
    }
  });

  it('gives each of many streams replaying at once the whole replay, in order', async () => {
    const seqs = await feedSeqs();
    const lastSeen = seqs.at(-REPLAY_BOUND)!;
    const keys = await Promise.all(Array.from({ length: 4 }, () => env.createKey(org.orgId, ['approvals:read'])));
    const streams = await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 5 }, () => openStream(env.baseUrl, { ...bearer(key.key), 'last-event-id': String(lastSeen) })),
      ),
    );
    try {
      expect(streams.map((stream) => stream.response.status)).toEqual(streams.map(() => 200));
      const expected = seqs.slice(-REPLAY_BOUND + 1);
      await Promise.all(streams.map((stream) => stream.waitFor((messages) => messages.length >= expected.length, 30_000)));
      for (const stream of streams) expect(stream.messages.map((m) => Number(m.id))).toEqual(expected);
    } finally {
      await Promise.all(streams.map((stream) => stream.close()));
    }
  }, 60_000);

  it('tells a stream that fell more than 1,000 live events behind its client to read again, and goes on live', async () => {
    const abort = new AbortController();
    const stream = env.services.approvalFeed.stream({ orgId: org.orgId }, null, abort.signal);
    // The stream is listening; it hands over one event, then its client takes nothing while 1,001 more are published.
    const publish = (seqs: number[]) =>
      env.services.approvalFeed.publish(
        seqs.map((seq) => ({
          id: `e${seq}`,
          type: 'approval.created' as const,
          orgId: org.orgId,
          seq,
          actor: null,
          createdAt: new Date(),
          data: { approvalId: `a${seq}`, status: 'pending' },
        })),
      );
    const behind = (await feedSeqs()).slice(-REPLAY_BOUND - 2);
    const first = stream.next();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await publish(behind.slice(0, 1));
    try {
      expect(await first).toEqual({ done: false, value: { kind: 'event', event: expect.objectContaining({ seq: behind[0] }) } });
      await publish(behind.slice(1));
      // The rest went past what a stream holds for a client that does not read: it starts over.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await stream.next()).value).toEqual({ kind: 'reset' });
      const live = await org
        .request('post', '/v1/approvals')
        .send({ action: 'after-overflow', payload: {}, policyKey: 'review' })
        .expect(201);
      const next = await stream.next();
      expect(next.value).toMatchObject({ kind: 'event', event: { approvalId: live.body.id, type: 'approval.created' } });
    } finally {
      abort.abort();
      await stream.return(undefined);
    }
  });
});
