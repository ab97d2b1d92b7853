import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ENQUEUE_BATCH_TIMEOUT_MS } from '../src/jobs/job-queues.js';
import { withTimeout } from '../src/lib/time.js';
import { OutboxRelay } from '../workers/outbox-relay.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { freePort } from './support/listen.js';
import { createTestEnv } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  // Each step bounded: one slow step (a worker draining after a Redis restart) must not keep
  // the others, which close the connections it may be waiting on, from running.
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 120_000);

/** A redis-server on this port (empty, like production here). */
async function startRedis(port: number): Promise<ChildProcess> {
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    redis.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('Ready to accept connections') && resolve());
    redis.on('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  return redis;
}

/** A Redis of the test's own, which it can stop and start again, or freeze. */
async function ownRedis() {
  const port = await freePort();
  let server = await startRedis(port);
  cleanups.push(() => stop(server));
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => stop(server),
    restart: async () => {
      server = await startRedis(port);
    },
    /** Stopped, not killed: the connections stay open and nothing answers or fails on them. */
    freeze: () => {
      server.kill('SIGSTOP');
      cleanups.push(async () => server.kill('SIGCONT'));
    },
    thaw: () => server.kill('SIGCONT'),
  };
}

async function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  await once(child, 'exit');
}

async function setUp(overrides: Record<string, string>) {
  const env = await createTestEnv({ WEBHOOK_BACKOFF_SCALE: '0.001', OUTBOX_POLL_INTERVAL_MS: '200', ...overrides });
  cleanups.push(() => env.close());
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 3600 }).expect(200);
  await org
    .request('post', '/v1/webhooks')
    .send({ url: receiver.url('/hook'), events: ['approval.approved'] })
    .expect(201);
  const createPending = async (policyKey = 'review') =>
    (await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey }).expect(201)).body.id as string;
  return { env, receiver, org, createPending };
}

const approvedIds = (receiver: Receiver) => new Set(receiver.at('/hook').map((d) => d.body.data.approvalId as string));

describe('at-least-once delivery', () => {
  it('delivers every webhook of decisions made while Redis was down, once it is back', async () => {
    const redis = await ownRedis();
    const { env, receiver, org, createPending } = await setUp({ REDIS_URL: redis.url });
    const worker = await startWorkerRuntime(env.services, ['outbox-relay', 'webhook-delivery', 'maintenance']);
    cleanups.push(() => worker.stop());

    const ids = await Promise.all(Array.from({ length: 10 }, createPending));
    await redis.stop();
    for (const id of ids) await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
    expect(approvedIds(receiver).size).toBe(0);
    // Down past the bound of a handover, which the relay gives up on, and for a few more polls.
    await eventually(() => env.logs.some((line) => line.msg === 'outbox relay failed; retrying at the next poll'), 15_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    await redis.restart();
    await receiver.waitFor(() => ids.every((id) => approvedIds(receiver).has(id)), 20_000);
    // The webhooks' events may go out in an earlier relay batch than the rest of the backlog
    // (votes, settlements other consumers read): every row is relayed in the end.
    await eventually(async () => (await env.services.db.outboxMessage.count({ where: { orgId: org.orgId, relayedAt: null } })) === 0);
    // One error for the outage however long it lasted, and a line when it ended.
    const relayLines = () =>
      env.logs.map((line) => String(line.msg)).filter((msg) => msg.startsWith('outbox relay') && msg !== 'outbox relay still failing');
    await eventually(() => relayLines().includes('outbox relay recovered'));
    expect(relayLines()).toEqual(['outbox relay failed; retrying at the next poll', 'outbox relay recovered']);
  }, 120_000);

  it('completes a delivery whose worker process was killed mid-attempt, after a restart', async () => {
    const { env, receiver, org, createPending } = await setUp({});
    receiver.respond('/hook', (_delivery, n) => (n === 1 ? 'hang' : { status: 200 }));
    const workerEnv = {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: env.config.DATABASE_URL,
      REDIS_PREFIX: env.config.REDIS_PREFIX,
      WORKER_LOCK_DURATION_MS: '2000',
      WEBHOOK_BACKOFF_SCALE: '0.001',
      OUTBOX_POLL_INTERVAL_MS: '200',
    };
    const startWorker = async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'workers/index.ts'], {
        env: workerEnv,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      cleanups.push(() => stop(child, 'SIGKILL'));
      await new Promise<void>((resolve) =>
        child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('worker started') && resolve()),
      );
      return child;
    };

    const first = await startWorker();
    const id = await createPending();
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
    await receiver.waitFor(() => receiver.at('/hook').length === 1);
    await stop(first, 'SIGKILL');

    await startWorker();
    await receiver.waitFor(() => receiver.at('/hook').length >= 2, 20_000);
    const [killed, completed] = receiver.at('/hook');
    expect(completed!.body.id).toBe(killed!.body.id);
    expect(completed!.headers['x-service-webhook-id']).toBe(killed!.headers['x-service-webhook-id']);
    const delivery = await env.services.db.webhookDelivery.findUniqueOrThrow({
      where: { id: killed!.headers['x-service-webhook-id'] as string },
    });
    await expect
      .poll(async () => (await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).status, { timeout: 5000 })
      .toBe('succeeded');
  }, 120_000);

  it('finishes its running delivery on SIGTERM before the process exits', async () => {
    const { env, receiver, org, createPending } = await setUp({});
    receiver.respond('/hook', () => 'hang');
    const child = spawn(process.execPath, ['--import', 'tsx', 'workers/index.ts'], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        DATABASE_URL: env.config.DATABASE_URL,
        REDIS_PREFIX: env.config.REDIS_PREFIX,
        OUTBOX_POLL_INTERVAL_MS: '200',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanups.push(() => stop(child, 'SIGKILL'));
    await new Promise<void>((resolve) =>
      child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('worker started') && resolve()),
    );
    const id = await createPending();
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
    await receiver.waitFor(() => receiver.at('/hook').length === 1);

    receiver.respond('/hook', () => ({ status: 200 }));
    const hanging = receiver.at('/hook')[0]!;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    // The attempt in flight times out (15 s) or is answered; either way it is recorded before exit.
    const [code] = await exited;
    expect(code).toBe(0);
    const delivery = await env.services.db.webhookDelivery.findUniqueOrThrow({
      where: { id: hanging.headers['x-service-webhook-id'] as string },
      include: { attempts: true },
    });
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]!.error).toMatch(/timeout/);
    expect(delivery.status).toBe('pending');
    expect(delivery.nextAttemptAt).not.toBeNull();
  }, 120_000);

  it('delivers each webhook exactly once with two workers running side by side', async () => {
    const { env, receiver, org, createPending } = await setUp({});
    const peer = await env.createPeer();
    for (const services of [env.services, peer.services]) {
      const worker = await startWorkerRuntime(services, ['outbox-relay', 'webhook-delivery']);
      cleanups.push(() => worker.stop());
    }
    const ids = await Promise.all(Array.from({ length: 40 }, createPending));
    await Promise.all(ids.map((id) => org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200)));
    await receiver.waitFor(() => ids.every((id) => approvedIds(receiver).has(id)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.at('/hook')).toHaveLength(40);
  });
});

describe('a Redis that stops answering', () => {
  it('holds no creation, decision or member change: each is answered once committed, its hints are given up after a bound, and decisions go on when Redis answers again', async () => {
    const redis = await ownRedis();
    const { env, org, createPending } = await setUp({ REDIS_URL: redis.url });
    const decidedBefore = await createPending();

    redis.freeze();
    const created = await createPending();
    await org.asReviewer('post', `/v1/approvals/${decidedBefore}/decision`).send({ verdict: 'approved' }).expect(200);
    await org.request('post', '/v1/members').send({ email: 'frozen-redis@example.com', role: 'reviewer' }).expect(201);

    // Each hint is given up on after a bound, so a hung Redis holds a bounded number of them.
    await eventually(async () =>
      ['waking the outbox relay', 'waking long-polls'].every((hint) =>
        env.logs.some((line) => String(line.msg).startsWith(hint) && String(line.msg).endsWith(' failed')),
      ),
    );
    redis.thaw();
    await org.asReviewer('post', `/v1/approvals/${created}/decision`).send({ verdict: 'approved' }).expect(200);
  });
});

describe('an outbox relay whose Redis stops answering', () => {
  it('gives a handover up at its bound and leaves the rows to the next batch, which relays them once Redis answers', async () => {
    const redis = await ownRedis();
    const { env, org, createPending } = await setUp({ REDIS_URL: redis.url });
    const id = await createPending();
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
    const outboxRows = () =>
      env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId }, select: { relayedAt: true, claimedUntil: true } });
    const pending = (await outboxRows()).length;
    expect(pending).toBeGreaterThan(0);

    // The jobs' commands are sent and never answered.
    redis.freeze();
    const relay = new OutboxRelay(env.services, { batchSize: 100, pollIntervalMs: 200, leaseMs: 60_000, passesInFlight: 1 });
    const started = performance.now();
    await expect(relay.relayBatch()).rejects.toThrow(`enqueueing relayed jobs took longer than ${ENQUEUE_BATCH_TIMEOUT_MS} ms`);
    const waitedMs = performance.now() - started;
    expect(waitedMs).toBeGreaterThanOrEqual(ENQUEUE_BATCH_TIMEOUT_MS - 50);
    expect(waitedMs).toBeLessThan(ENQUEUE_BATCH_TIMEOUT_MS + 2_000);
    // Released, not left claimed until the lease (a minute) runs out.
    expect(await outboxRows()).toEqual(Array.from({ length: pending }, () => ({ relayedAt: null, claimedUntil: null })));

    redis.thaw();
    expect(await relay.relayBatch()).toBe(pending);
    expect((await outboxRows()).every((row) => row.relayedAt !== null && row.claimedUntil === null)).toBe(true);
  });
});

describe('deadlines that pass while Redis is down', () => {
  it('are handed to the expiry queue once Redis is back, without the sweeper, and the outage is one error in the log', async () => {
    const redis = await ownRedis();
    const { env, org, createPending } = await setUp({ REDIS_URL: redis.url });
    const worker = await startWorkerRuntime(env.services, ['approval-expiry']);
    cleanups.push(() => worker.stop());
    await org.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
    const ids = await Promise.all(Array.from({ length: 5 }, () => createPending('short')));

    await redis.stop();
    // Down past the deadlines and past the bound of a handover, which the watcher gives up on.
    await eventually(() => env.logs.some((line) => line.msg === 'deadline watcher failed; looking again shortly'), 15_000);
    // And down for a few more looks, each of which fails too.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await redis.restart();
    const statuses = async () =>
      (await env.services.db.approval.findMany({ where: { id: { in: ids } }, select: { status: true } })).map((row) => row.status);
    await eventually(async () => (await statuses()).every((status) => status === 'expired'), 20_000);
    // One error for the outage however long it lasted, and a line when it ended.
    const watcherLines = () =>
      env.logs
        .map((line) => String(line.msg))
        .filter((msg) => msg.startsWith('deadline watcher') && msg !== 'deadline watcher still failing');
    await eventually(() => watcherLines().includes('deadline watcher recovered'));
    expect(watcherLines()).toEqual(['deadline watcher failed; looking again shortly', 'deadline watcher recovered']);
  });
});

describe('web process', () => {
  it('answers open long-polls and exits cleanly on SIGTERM', async () => {
    const { env, org, createPending } = await setUp({});
    const port = await freePort();
    const web = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: {
        ...process.env,
        NODE_ENV: 'test',
        PORT: String(port),
        DATABASE_URL: env.config.DATABASE_URL,
        REDIS_PREFIX: env.config.REDIS_PREFIX,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanups.push(() => stop(web, 'SIGKILL'));
    await new Promise<void>((resolve) =>
      web.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('api listening') && resolve()),
    );

    const id = await createPending();
    const polling = fetch(`http://127.0.0.1:${port}/v1/approvals/${id}?wait=30`, { headers: { authorization: `Bearer ${org.key}` } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const exited = once(web, 'exit');
    web.kill('SIGTERM');
    const answer = await polling;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { status: string }).status).toBe('pending');
    const [code] = await exited;
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
