import { createHash, createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../src/modules/webhooks/verify-webhook.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { jcs, readChain } from './support/audit-chain.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver, type ReceivedDelivery } from './support/webhook-receiver.js';
import { eventually } from './support/eventually.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let receiver: Receiver;

const ALL_EVENTS = ['approval.approved', 'approval.rejected', 'approval.expired', 'approval.escalated', 'approval.orphaned'];

beforeAll(async () => {
  env = await createTestEnv({ WEBHOOK_BACKOFF_SCALE: '0.001', EXPIRY_SWEEP_INTERVAL_MS: '500' });
  worker = await startWorkerRuntime(env.services, [
    'outbox-relay',
    'approval-expiry',
    'webhook-delivery',
    'orphan-alert',
    'endpoint-disabled-alert',
    'maintenance',
  ]);
  receiver = await startReceiver();
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 1 }).expect(200);
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
  await org.request('put', '/v1/policies/escalating').send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'review' }).expect(200);
});
afterAll(async () => {
  await worker.stop();
  await receiver.close();
  await env.close();
});

async function register(path: string, events = ALL_EVENTS, as: TestOrg = org) {
  const res = await as
    .request('post', '/v1/webhooks')
    .send({ url: receiver.url(path), events })
    .expect(201);
  return res.body as { id: string; secret: string };
}

const createApproval = async (policyKey: string, as: TestOrg = org) =>
  (await as.request('post', '/v1/approvals').send({ action: 'pay', payload: { amount: 12.5, note: 'ünïcode' }, policyKey })).body as {
    id: string;
  };

/** Verifies one delivery the four ways a receiver might: by hand, Stripe, Standard Webhooks, our helper. */
function expectVerifies(delivery: ReceivedDelivery, secret: string) {
  const timestamp = delivery.headers['x-service-timestamp'] as string;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${delivery.rawBody}`).digest('hex');
  const signatures = (delivery.headers['x-service-signature'] as string).split(' ');
  expect(signatures).toContain(`v1=${expected}`);
  expect(Stripe.webhooks.constructEvent(delivery.rawBody, `t=${timestamp},v1=${expected}`, secret, 300)).toEqual(delivery.body);
  expect(new Webhook(secret).verify(delivery.rawBody, delivery.headers as Record<string, string>)).toEqual(delivery.body);
  expect(verifyWebhook({ rawBody: delivery.rawBody, headers: delivery.headers, secret })).toEqual(delivery.body);
}

describe('webhook delivery', () => {
  it('delivers every event type, signed, with the body of spec 2.6', async () => {
    const endpoint = await register('/all');
    const approved = await createApproval('allow');
    const decided = await createApproval('review');
    await org.asReviewer('post', `/v1/approvals/${decided.id}/decision`).send({ verdict: 'rejected', feedback: 'too much' }).expect(200);
    const expiring = await createApproval('review');
    const escalating = await createApproval('escalating');
    const orphan = await createApproval('no-such-policy');

    const byPolicy = { type: 'policy', id: 'allow' };
    const byKey = { type: 'api_key', id: org.reviewerKeyId };
    const expected: [string, string, Record<string, unknown>][] = [
      [
        'approval.approved',
        approved.id,
        { status: 'approved', verdict: 'approved', feedback: null, policyKey: 'allow', decidedBy: byPolicy },
      ],
      [
        'approval.rejected',
        decided.id,
        { status: 'rejected', verdict: 'rejected', feedback: 'too much', policyKey: 'review', decidedBy: byKey },
      ],
      ['approval.expired', expiring.id, { status: 'expired', verdict: null, feedback: null, policyKey: 'review', decidedBy: null }],
      [
        'approval.escalated',
        escalating.id,
        { status: 'escalated', verdict: null, feedback: null, policyKey: 'escalating', decidedBy: null, escalatedTo: expect.any(String) },
      ],
      [
        'approval.orphaned',
        orphan.id,
        { status: 'pending', verdict: null, feedback: null, policyKey: 'no-such-policy', decidedBy: null, policyVersion: null },
      ],
    ];
    const payload = { amount: 12.5, note: 'ünïcode' };
    // Contract C8: what a receiver recomputes before executing the payload.
    const payloadHash = createHash('sha256').update(jcs(payload)).digest('hex');
    const find = (type: string, approvalId: string) =>
      receiver.at('/all').find((d) => d.body.type === type && d.body.data.approvalId === approvalId);
    await receiver.waitFor(() => expected.every(([type, id]) => find(type, id)));

    for (const [type, approvalId, data] of expected) {
      const delivery = find(type, approvalId)!;
      expect(delivery.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        type,
        createdAt: expect.stringMatching(/Z$/),
        // No AUDIT_SIGNING_KEY here: the receipt is null (docs/receipts.md).
        // Each policy was PUT once (version 1); an orphan has none.
        data: {
          approvalId,
          action: 'pay',
          payload,
          agent: null,
          payloadHash,
          revision: 1,
          receipt: null,
          policyVersion: 1,
          stage: null,
          ...data,
        },
      });
      expect(delivery.headers).toMatchObject({
        'content-type': 'application/json',
        'user-agent': expect.stringMatching(/ApprovalGate/),
        'x-service-webhook-id': expect.stringMatching(/^[0-9a-f-]{36}$/),
        'webhook-id': delivery.body.id,
        'webhook-timestamp': delivery.headers['x-service-timestamp'],
      });
      expect(Math.abs(Number(delivery.headers['x-service-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
      expectVerifies(delivery, endpoint.secret);
    }
  });

  it('sends only subscribed types, and nothing more once an endpoint is disabled or deleted', async () => {
    await register('/rejections-only', ['approval.rejected']);
    const disabled = await register('/disabled');
    const deleted = await register('/deleted');
    await org.request('patch', `/v1/webhooks/${disabled.id}`).send({ enabled: false }).expect(200);
    await org.request('delete', `/v1/webhooks/${deleted.id}`).expect(204);

    const approved = await createApproval('allow');
    const rejected = await createApproval('review');
    await org.asReviewer('post', `/v1/approvals/${rejected.id}/decision`).send({ verdict: 'rejected' }).expect(200);
    await receiver.waitFor(() => receiver.at('/rejections-only').some((d) => d.body.data.approvalId === rejected.id));
    // The approval.approved event went out to /all by now; give the others the same chance.
    await receiver.waitFor(() => receiver.at('/all').some((d) => d.body.data.approvalId === approved.id));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.at('/rejections-only').map((d) => d.body.type)).toEqual(['approval.rejected']);
    expect(receiver.at('/disabled')).toHaveLength(0);
    expect(receiver.at('/deleted')).toHaveLength(0);
  });

  it('retries a failing receiver with the same event and delivery id, each attempt signed afresh', async () => {
    const endpoint = await register('/flaky', ['approval.approved']);
    receiver.respond('/flaky', (_delivery, n) => (n <= 2 ? { status: 500, body: `boom ${n}` } : { status: 200 }));
    const approval = await createApproval('allow');
    const attempts = (await receiver.waitFor(() => receiver.at('/flaky').length >= 3)).filter((d) => d.path === '/flaky');

    expect(new Set(attempts.map((d) => d.body.id)).size).toBe(1);
    expect(new Set(attempts.map((d) => d.headers['x-service-webhook-id'])).size).toBe(1);
    for (const attempt of attempts) {
      // Signed afresh at send time (whole seconds), so even a retry days later passes a 300 s tolerance.
      expect(Math.abs(Number(attempt.headers['x-service-timestamp']) - attempt.receivedAt / 1000)).toBeLessThan(1.5);
      expectVerifies(attempt, endpoint.secret);
    }

    const deliveryId = attempts[0]!.headers['x-service-webhook-id'] as string;
    const log = await eventually(async () => {
      const res = await org.request('get', `/v1/webhooks/${endpoint.id}/deliveries`).expect(200);
      const delivery = res.body.deliveries.find((d: { id: string }) => d.id === deliveryId);
      return delivery?.status === 'succeeded' ? delivery : null;
    });
    expect(log).toMatchObject({ eventType: 'approval.approved', attemptCount: 3 });
    expect(log.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 200]);
    expect(log.attempts[0]).toMatchObject({ responseBody: 'boom 1', error: expect.any(String), durationMs: expect.any(Number) });
    expect(approval.id).toBe(attempts[0]!.body.data.approvalId);
  });

  it('honours Retry-After on a 429 even with the schedule scaled down', async () => {
    await register('/throttled', ['approval.approved']);
    receiver.respond('/throttled', (_delivery, n) => (n === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 204 }));
    await createApproval('allow');
    const [first, second] = (await receiver.waitFor(() => receiver.at('/throttled').length >= 2, 10_000)).filter(
      (d) => d.path === '/throttled',
    );
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1950);
  });

  it('stops at 410 Gone and disables the endpoint, on the record', async () => {
    const endpoint = await register('/gone', ['approval.approved']);
    receiver.respond('/gone', () => ({ status: 410 }));
    await createApproval('allow');
    await receiver.waitFor(() => receiver.at('/gone').length >= 1);
    const disabled = await eventually(async () => {
      const res = await org.request('get', `/v1/webhooks/${endpoint.id}`).expect(200);
      return res.body.enabled === false ? res.body : null;
    });
    expect(disabled.enabled).toBe(false);
    await createApproval('allow');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.at('/gone')).toHaveLength(1);
    const chain = await readChain(env.services.db, org.orgId);
    const event = chain.find((e) => e.type === 'webhook.updated' && e.data.endpointId === endpoint.id && e.data.enabled === false)!;
    expect(JSON.parse(event.actor)).toEqual({ type: 'system', id: 'webhook-delivery' });
  });

  it('disables an endpoint whose every delivery has failed for five days, and emails the admins', async () => {
    const endpoint = await register('/failing', ['approval.approved']);
    receiver.respond('/failing', () => ({ status: 503 }));
    await env.services.db.webhookEndpoint.update({
      where: { id: endpoint.id },
      data: { failingSince: new Date(Date.now() - 5 * 24 * 3600 * 1000 - 60_000) },
    });
    await createApproval('allow');
    const disabled = await eventually(async () => {
      const row = await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
      return row.enabled ? null : row;
    });
    expect(disabled.disabledReason).toMatch(/failed since/);
    // The service's disabling is an audit event; the admins' mail is its consumer's task.
    const disabling = (await readChain(env.services.db, org.orgId)).find(
      (event) => event.type === 'webhook.updated' && event.data.endpointId === endpoint.id && event.data.enabled === false,
    )!;
    const { eventId } = await env.services.db.outboxMessage.findFirstOrThrow({ where: { orgId: org.orgId, auditSeq: disabling.seq } });
    const mailTask = await eventually(() =>
      env.services.db.consumerTask.findFirst({ where: { eventId, consumer: 'endpoint-disabled-alert', status: 'done' } }),
    );
    expect(mailTask.orgId).toBe(org.orgId);
  });

  it('keeps delivering to other endpoints while one hangs', async () => {
    await register('/hanging', ['approval.approved']);
    await register('/healthy', ['approval.approved']);
    receiver.respond('/hanging', () => 'hang');
    const approvals = await Promise.all(Array.from({ length: 12 }, () => createApproval('allow')));
    const started = Date.now();
    await receiver.waitFor(() => approvals.every((a) => receiver.at('/healthy').some((d) => d.body.data.approvalId === a.id)), 5000);
    expect(Date.now() - started).toBeLessThan(5000);
    // Only the endpoint's share of slots is ever taken by the hanging endpoint.
    expect(receiver.at('/hanging').length).toBeLessThanOrEqual(env.config.WEBHOOK_ENDPOINT_CONCURRENCY);
  });

  it('signs with both secrets during a rotation, so either verifies', async () => {
    const endpoint = await register('/rotating', ['approval.approved']);
    const rotated = (await org.request('post', `/v1/webhooks/${endpoint.id}/rotate-secret`).expect(200)).body as { secret: string };
    expect(rotated.secret).not.toBe(endpoint.secret);
    await createApproval('allow');
    const [delivery] = await receiver.waitFor(() => receiver.at('/rotating').length >= 1).then(() => receiver.at('/rotating'));
    expect((delivery!.headers['x-service-signature'] as string).split(' ')).toHaveLength(2);
    expect((delivery!.headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
    expectVerifies(delivery!, rotated.secret);
    expectVerifies(delivery!, endpoint.secret);
  });

  it('redelivers a delivery on request, with the same ids', async () => {
    const endpoint = await register('/redeliver', ['approval.approved']);
    await createApproval('allow');
    const [first] = await receiver.waitFor(() => receiver.at('/redeliver').length >= 1).then(() => receiver.at('/redeliver'));
    const deliveryId = first!.headers['x-service-webhook-id'] as string;
    await eventually(
      async () => (await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).status === 'succeeded',
    );
    await org.request('post', `/v1/webhooks/${endpoint.id}/deliveries/${deliveryId}/redeliver`).expect(202);
    await receiver.waitFor(() => receiver.at('/redeliver').length >= 2);
    const [, second] = receiver.at('/redeliver');
    expect(second!.headers['x-service-webhook-id']).toBe(deliveryId);
    expect(second!.body.id).toBe(first!.body.id);
  });
});
