import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

// No worker runs here: the test calls the fan-out itself, as the relay would.
let env: TestEnv;
let org: TestOrg;
let receiver: Receiver;

beforeAll(async () => {
  env = await createTestEnv();
  org = await env.createOrg();
  receiver = await startReceiver();
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
});
afterAll(async () => {
  await receiver.close();
  await env.close();
});

describe('webhook fan-out', () => {
  it('returns the deliveries of many events in turns across endpoints, so queued jobs spread over them', async () => {
    const endpoints: string[] = [];
    for (const path of ['/a', '/b', '/c']) {
      const created = await org.request('post', '/v1/webhooks').send({ url: receiver.url(path), events: ['approval.approved'] });
      endpoints.push((created.body as { id: string }).id);
    }
    for (let i = 0; i < 4; i++)
      await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200);
    const events = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, eventType: 'approval.approved' } });
    expect(events).toHaveLength(4);

    const pending = await env.services.deliveries.fanOut(events.map((event) => event.eventId));
    const rows = await env.services.db.webhookDelivery.findMany({ where: { id: { in: pending.map((delivery) => delivery.id) } } });
    const endpointOf = new Map(rows.map((row) => [row.id, row.endpointId]));
    const order = pending.map((delivery) => endpointOf.get(delivery.id)!);

    expect(order).toHaveLength(12);
    // Each run of three holds every endpoint once: no endpoint's jobs come in a block.
    for (let turn = 0; turn < 4; turn++) expect(new Set(order.slice(turn * 3, turn * 3 + 3))).toEqual(new Set(endpoints));
  });
});
