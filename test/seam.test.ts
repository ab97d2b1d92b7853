import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CONSUMERS } from '../src/consumers/registry.js';
import { withTimeout } from '../src/lib/time.js';
import { createServices, type Services } from '../src/services.js';
import { startWorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { createRecordingTable, RECORDED_TYPES, recordingConsumer } from './support/recording-consumer.js';
import { spawnWorker } from './support/worker-process.js';
import { startSmtpServer } from './support/smtp-server.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver } from './support/webhook-receiver.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 120_000);

async function setUp(overrides: Record<string, string> = {}) {
  const env = await createTestEnv({ OUTBOX_POLL_INTERVAL_MS: '100', ...overrides });
  cleanups.push(() => env.close());
  await createRecordingTable(env.services.sql);
  return env;
}

/** Traffic that makes every kind of event, subscribed to by the recorder or not. */
async function makeEvents(org: TestOrg, count: number): Promise<void> {
  await org
    .request('put', '/v1/policies/refunds')
    .send({ rules: [{ when: 'payload.amount < 10', outcome: 'allow' }] })
    .expect(200);
  for (let i = 0; i < count; i++) {
    const created = await org.request('post', '/v1/approvals').send({ action: 'refund', payload: { amount: i }, policyKey: 'refunds' });
    if (created.status === 201 && i % 3 !== 0) {
      await org
        .asReviewer('post', `/v1/approvals/${created.body.id}/decision`)
        .send({ verdict: i % 2 ? 'approved' : 'rejected' })
        .expect(200);
    }
  }
  await org.request('post', '/v1/approvals').send({ action: 'deploy', payload: {}, policyKey: 'nobody-wrote-this' }).expect(201);
  await org.request('delete', '/v1/policies/refunds').expect(204);
}

/** The ids of the org's domain events of the recorded types, from the outbox. */
async function subscribedEventIds(env: TestEnv, orgId: string): Promise<string[]> {
  const rows = await env.services.db.outboxMessage.findMany({ where: { orgId, eventType: { in: [...RECORDED_TYPES] } } });
  return rows.map((row) => row.eventId).sort();
}

async function recorded(env: TestEnv, orgId: string) {
  return env.services.sql.query<{ eventId: string; type: string; runs: number }>(
    null,
    'SELECT event_id AS "eventId", type, runs FROM recorded_events WHERE org_id = $1 ORDER BY event_id',
    [orgId],
  );
}

describe('the consumer seam', () => {
  it('hands a registered consumer every event of its types exactly once, also when its worker is killed mid-run', async () => {
    const env = await setUp();
    const org = await env.createOrg();
    const first = await spawnWorker(env, cleanups, ['outbox-relay', recordingConsumer.job.queue]);
    await makeEvents(org, 60);
    await eventually(async () => (await recorded(env, org.orgId)).length >= 5);
    first.kill('SIGKILL');
    await once(first, 'exit');

    await spawnWorker(env, cleanups, ['outbox-relay', recordingConsumer.job.queue]);
    const expected = await subscribedEventIds(env, org.orgId);
    const seen = await eventually(async () => {
      const rows = await recorded(env, org.orgId);
      return rows.length === expected.length ? rows : null;
    }, 30_000);

    expect(seen.map((row) => row.eventId)).toEqual(expected);
    expect(new Set(seen.map((row) => row.type))).toEqual(new Set(RECORDED_TYPES));
    // A task is marked done just after its handler acted.
    const tasks = await eventually(async () => {
      const all = await env.services.db.consumerTask.findMany({ where: { orgId: org.orgId, consumer: recordingConsumer.name } });
      return all.every((task) => task.status === 'done') ? all : null;
    });
    expect(tasks).toHaveLength(expected.length);
  }, 120_000);

  it('does every consumer’s work when Redis loses its jobs after the relay handed them over', async () => {
    const smtp = await startSmtpServer();
    cleanups.push(() => smtp.close());
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const env = await setUp({
      SMTP_URL: smtp.url,
      WEBHOOK_BACKOFF_SCALE: '0.001',
      CONSUMER_SWEEP_INTERVAL_MS: '200',
      CONSUMER_TASK_GRACE_MS: '200',
      DELIVERY_SWEEP_INTERVAL_MS: '200',
      DELIVERY_STALLED_GRACE_MS: '200',
    });
    const services = await createServices(env.config, env.services.logger, 'worker', { consumers: [...CONSUMERS, recordingConsumer] });
    cleanups.push(() => services.close());
    const org = await env.createOrg({ adminEmails: ['ops@acme.test'] });
    const run = async (roles: string[], work: () => Promise<unknown>) => {
      const runtime = await startWorkerRuntime(services, roles);
      try {
        await work();
      } finally {
        await runtime.stop();
      }
    };

    // The service disables an endpoint that answers 410: its audit event is the admins' mail.
    await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
    const gone = await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/gone'), events: ['approval.approved'] })
      .expect(201);
    receiver.respond('/gone', () => ({ status: 410 }));
    await run(['outbox-relay', 'webhook-delivery'], async () => {
      await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200);
      await eventually(async () => !(await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id: gone.body.id } })).enabled);
    });

    // An orphan, relayed to its consumers while none of them runs.
    await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/ok'), events: ['approval.orphaned'] })
      .expect(201);
    let orphanId = '';
    await run(['outbox-relay'], async () => {
      orphanId = (await org.request('post', '/v1/approvals').send({ action: 'drop-table', payload: {}, policyKey: 'db-admin' }).expect(201))
        .body.id;
      await eventually(async () => (await env.services.db.outboxMessage.count({ where: { orgId: org.orgId, relayedAt: null } })) === 0);
    });

    // Redis forgets every job, as a restart without persistence does.
    await deleteKeys(env.config.REDIS_URL.url, `${env.config.REDIS_PREFIX}:*`);

    await run(
      services.jobs.definitions.map((definition) => definition.queue),
      async () => {
        await eventually(() => smtp.received.some((mail) => mail.text.includes(orphanId)), 20_000);
        await eventually(() => smtp.received.some((mail) => mail.text.includes(gone.body.id)), 20_000);
        await receiver.waitFor(() => receiver.at('/ok').some((delivery) => delivery.body.data.approvalId === orphanId), 20_000);
        const expected = await subscribedEventIds(env, org.orgId);
        await eventually(async () => (await recorded(env, org.orgId)).length === expected.length, 20_000);
      },
    );
    const tasks = await env.services.db.consumerTask.findMany({ where: { orgId: org.orgId } });
    expect(tasks.filter((task) => task.status !== 'done')).toEqual([]);
    // Mail, Slack and Teams have nobody to serve in this organization (no member takes mail, nothing
    // is connected): their events make no task for them.
    expect(new Set(tasks.map((task) => task.consumer))).toEqual(
      new Set(['orphan-alert', 'endpoint-disabled-alert', recordingConsumer.name]),
    );
  }, 120_000);
});

async function deleteKeys(url: string, pattern: string): Promise<void> {
  const redis = new Redis(url);
  try {
    for await (const keys of redis.scanStream({ match: pattern, count: 500 })) {
      if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
    }
  } finally {
    await redis.quit();
  }
}
