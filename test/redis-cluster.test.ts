import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { JOBS } from '../src/services.js';
import { withTimeout } from '../src/lib/time.js';
import { startWorkerRuntime, WORKER_ROLES } from '../workers/worker-runtime.js';
import { openStream } from './support/event-stream.js';
import { eventually } from './support/eventually.js';
import { startRedisCluster, type RedisClusterUnderTest } from './support/redis-cluster.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const cleanups: (() => Promise<unknown>)[] = [];
let cluster: RedisClusterUnderTest;
let env: TestEnv;
let org: TestOrg;
let receiver: Receiver;

beforeAll(async () => {
  cluster = await startRedisCluster();
  cleanups.push(() => cluster.stop());
  env = await createTestEnv({
    REDIS_URL: cluster.url,
    WEBHOOK_BACKOFF_SCALE: '0.001',
    OUTBOX_POLL_INTERVAL_MS: '200',
    SIGN_IN_ATTEMPTS_PER_ADDRESS: '3',
    // A loaded machine must not turn a slow connection into a 503: this test is about Redis.
    DATABASE_CONNECT_TIMEOUT_MS: '10000',
    DATABASE_QUERY_TIMEOUT_MS: '15000',
  });
  cleanups.push(() => env.close());
  // Commands fail fast until the client has the cluster's slot map (as they do while one server is away).
  await eventually(() => env.services.redis.status === 'ready', 30_000);
  receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 3600 }).expect(200);
  await org.request('put', '/v1/policies/brief').send({ timeoutSeconds: 1 }).expect(200);
  await org
    .request('post', '/v1/webhooks')
    .send({ url: receiver.url('/hook'), events: ['approval.approved', 'approval.rejected', 'approval.expired'] })
    .expect(201);
}, 60_000);

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 60_000);

describe('REDIS_URL naming a cluster', () => {
  it('parses a list of nodes, with credentials, and names what is wrong with a bad one', () => {
    const parsed = loadConfig({ REDIS_URL: 'rediss+cluster://app:p%40ss@10.0.0.1:7000,[::1]:7001,redis-2.internal:7002' }).REDIS_URL;
    expect(parsed).toMatchObject({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
        { host: 'redis-2.internal', port: 7002 },
      ],
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
    expect(() => loadConfig({ REDIS_URL: 'redis+cluster://10.0.0.1:7000,10.0.0.2' })).toThrow(
      /REDIS_URL names a cluster node that is not host:port: '10.0.0.2'/,
    );
    expect(() => loadConfig({ REDIS_URL: 'memcached://10.0.0.1' })).toThrow(/REDIS_URL must be redis:\/\/host:port/);
  });

  it('keeps every key of a queue in one hash slot, and spreads the queues over the masters', async () => {
    await org.request('post', '/v1/approvals').send({ action: 'warm-up', payload: {}, policyKey: 'review' }).expect(201);
    const slots = new Map<string, Set<number>>();
    for (const definition of JOBS) {
      const queue = env.services.jobs.queue(definition);
      await queue.waitUntilReady();
      const keys = [queue.keys.meta!, queue.keys.wait!, queue.keys.delayed!, queue.keys.events!, queue.toKey('some-job-id')];
      const keySlots = await Promise.all(keys.map(async (key) => (await env.services.redis.call('cluster', 'keyslot', key)) as number));
      slots.set(definition.queue, new Set(keySlots));
    }
    for (const [queue, keySlots] of slots) expect(keySlots.size, queue).toBe(1);
    expect(new Set([...slots.values()].map((set) => [...set][0])).size).toBeGreaterThan(1);
  });

  it('shares the attempt limiter across web processes', async () => {
    const peer = await env.createPeer();
    await eventually(() => peer.services.redis.status === 'ready', 30_000);
    const attempt = (http: typeof env.http) =>
      http.post('/v1/session').set('origin', env.config.PUBLIC_URL).send({ email: 'nobody@example.com', password: 'wrong-password' });
    const answers = [];
    for (const http of [env.http, peer.http, env.http, peer.http]) answers.push((await attempt(http)).status);
    expect(answers.slice(0, 3)).not.toContain(429);
    expect(answers[3]).toBe(429);
  });

  it('loses nothing across a failover of a master during traffic: decisions, long-polls, expiry, webhooks and the live feed', async () => {
    const peer = await env.createPeer();
    await eventually(() => peer.services.redis.status === 'ready', 30_000);
    const worker = await startWorkerRuntime(env.services, WORKER_ROLES);
    cleanups.push(() => worker.stop());
    const feed = await openStream(peer.baseUrl, { authorization: `Bearer ${org.key}` });
    cleanups.push(async () => feed.close());

    const decided: string[] = [];
    const expiring: string[] = [];
    const longPolls: { id: string; status: number; body: { status: string }; ms: number }[] = [];
    /** One approval's life: created on one process, long-polled on another, decided on the first. */
    const oneDecision = async (n: number) => {
      const created = await org.request('post', '/v1/approvals').send({ action: `act-${n}`, payload: { n }, policyKey: 'review' });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const started = Date.now();
      const polled = peer.http
        .get(`/v1/approvals/${id}?wait=30`)
        .set('authorization', `Bearer ${org.key}`)
        .then((res) => res);
      await sleep(50);
      const verdict = n % 3 === 0 ? 'rejected' : 'approved';
      const decision = await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict });
      expect(decision.status).toBe(200);
      decided.push(id);
      const answer = await polled;
      longPolls.push({ id, status: answer.status, body: answer.body, ms: Date.now() - started });
    };
    const oneExpiry = async (n: number) => {
      const created = await org.request('post', '/v1/approvals').send({ action: `brief-${n}`, payload: {}, policyKey: 'brief' });
      expect(created.status).toBe(201);
      expiring.push(created.body.id as string);
    };
    const round = async (from: number, count: number) => {
      await Promise.all(Array.from({ length: count }, (_, i) => (i % 5 === 4 ? oneExpiry(from + i) : oneDecision(from + i))));
    };

    await round(0, 15);
    // The master of the delivery queue's slot goes over to its replica while a round is under way.
    const deliveryQueue = env.services.jobs.queue(JOBS.find((job) => job.queue === 'webhook-delivery')!);
    const [failover] = await Promise.all([cluster.failOver(deliveryQueue.keys.wait!), round(15, 30)]);
    expect(failover.from).not.toBe(failover.to);
    await round(45, 15);

    // Every long-poll answered with its decision, woken by the settlement (not by its wait running out).
    expect(longPolls).toHaveLength(decided.length);
    for (const poll of longPolls) {
      expect(poll.status).toBe(200);
      expect(['approved', 'rejected']).toContain(poll.body.status);
      // Well short of the 30 s wait, with room for a loaded machine.
      expect(poll.ms).toBeLessThan(25_000);
    }
    // Every decision and every expiry reached the webhook receiver.
    const delivered = () => new Set(receiver.at('/hook').map((delivery) => delivery.body.data.approvalId as string));
    await eventually(() => [...decided, ...expiring].every((id) => delivered().has(id)), 30_000);
    expect(delivered().size).toBe(decided.length + expiring.length);
    const statuses = await Promise.all(
      expiring.map(async (id) => (await org.request('get', `/v1/approvals/${id}`).expect(200)).body.status as string),
    );
    expect(new Set(statuses)).toEqual(new Set(['expired']));
    // The live feed of a console (another process) heard every decision, though the relay's passes
    // published them side by side and a failover held some back.
    await eventually(() => {
      const heard = new Set(feed.messages.filter((m) => m.data.status !== 'pending').map((m) => m.data.approvalId));
      return [...decided, ...expiring].every((id) => heard.has(id));
    }, 10_000);
    console.info(
      `redis cluster: ${decided.length} decided, ${expiring.length} expired, ${delivered().size} webhooks delivered, ` +
        `slowest long-poll ${Math.max(...longPolls.map((poll) => poll.ms))} ms, failover ${failover.from} -> ${failover.to}`,
    );
  }, 120_000);
});
