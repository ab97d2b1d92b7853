import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeAuditEvent } from '../src/modules/audit/audit-events.js';
import { readChain } from './support/audit-chain.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

// No worker runs here: the test records attempts itself, many in one call, as the group commit of
// the delivery workers does (ag_record_delivery_attempts), and checks the outcome against what the
// same attempts recorded one by one, in order, leave behind.
let env: TestEnv;
let org: TestOrg;

beforeAll(async () => {
  env = await createTestEnv();
  org = await env.createOrg();
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
});
afterAll(async () => {
  await env.close();
});

type Resolution = 'succeeded' | 'retry' | 'failed' | 'endpoint-disabled';

interface Attempt {
  deliveryId: string;
  attempt: number;
  resolution: Resolution;
  attemptedAt: Date;
  url?: string;
  endpointId?: string;
}

/** One endpoint and `count` deliveries to it awaiting their first attempt. */
async function endpointWithDeliveries(count: number, failingSince: Date | null = null) {
  const url = `http://127.0.0.1:9/${Math.random()}`;
  const created = await org
    .request('post', '/v1/webhooks')
    .send({ url, events: ['approval.approved'] })
    .expect(201);
  const endpointId = (created.body as { id: string }).id;
  await env.services.db.webhookEndpoint.update({ where: { id: endpointId }, data: { failingSince } });
  const eventIds: string[] = [];
  for (let i = 0; i < count; i++) {
    await org.request('post', '/v1/approvals').send({ action: 'pay', payload: {}, policyKey: 'allow' }).expect(200);
    const [event] = await env.services.db.outboxMessage.findMany({
      where: { orgId: org.orgId, eventType: 'approval.approved' },
      orderBy: { createdAt: 'desc' },
      take: 1,
    });
    eventIds.push(event!.eventId);
  }
  await env.services.deliveries.fanOut(eventIds);
  const deliveries = await env.services.db.webhookDelivery.findMany({ where: { endpointId }, orderBy: { createdAt: 'asc' } });
  expect(deliveries).toHaveLength(count);
  return { endpointId, url, deliveryIds: deliveries.map((delivery) => delivery.id) };
}

async function record(attempts: Attempt[]): Promise<boolean[]> {
  const rows = attempts.map(({ deliveryId, attempt, resolution, attemptedAt, url, endpointId }) => {
    const disableReason = resolution === 'endpoint-disabled' ? `gone at ${attemptedAt.toISOString()}` : null;
    const auditEvents = disableReason
      ? [
          serializeAuditEvent({
            type: 'webhook.updated',
            actor: { type: 'system', id: 'webhook-delivery' },
            createdAt: attemptedAt,
            data: { endpointId: endpointId!, url: url!, enabled: false, reason: disableReason },
          }),
        ]
      : [];
    return {
      deliveryId,
      attempt,
      attemptedAt,
      durationMs: 3,
      statusCode: resolution === 'succeeded' ? 200 : 500,
      error: resolution === 'succeeded' ? null : 'HTTP 500',
      responseBody: '',
      resolution,
      nextAttemptAt: resolution === 'retry' ? new Date(attemptedAt.getTime() + 60_000) : null,
      disableReason,
      auditEvents,
    };
  });
  const [row] = await env.services.sql.query<{ recorded: boolean[] }>(null, 'SELECT ag_record_delivery_attempts($1::jsonb) AS recorded', [
    JSON.stringify(rows),
  ]);
  return row!.recorded;
}

const at = (seconds: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, seconds));

/** Attempt number `attempt` of a delivery, made `seconds` into the test's minute. */
const made = (deliveryId: string, resolution: Resolution, seconds: number, attempt = 1): Attempt => ({
  deliveryId,
  attempt,
  resolution,
  attemptedAt: at(seconds),
});

describe('delivery attempts recorded many at once', () => {
  it('records an attempt once: a repeat in the same call or a later one, and a stale attempt, are refused', async () => {
    const { deliveryIds } = await endpointWithDeliveries(2);
    const [first, second] = deliveryIds as [string, string];
    expect(
      await record([made(first, 'retry', 1), made(second, 'succeeded', 1, 2), made(first, 'succeeded', 2), made(second, 'succeeded', 2)]),
    ).toEqual([true, false, false, true]);
    expect(await record([made(first, 'succeeded', 3)])).toEqual([false]);
    expect(await record([made(first, 'succeeded', 4, 2)])).toEqual([true]);

    const rows = await env.services.db.webhookDelivery.findMany({ where: { id: { in: deliveryIds } }, include: { attempts: true } });
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(first)).toMatchObject({ status: 'succeeded', attemptCount: 2, completedAt: at(4), nextAttemptAt: null });
    expect(
      byId
        .get(first)!
        .attempts.map((a) => a.attemptedAt)
        .sort((a, b) => a.getTime() - b.getTime()),
    ).toEqual([at(1), at(4)]);
    expect(byId.get(second)).toMatchObject({ status: 'succeeded', attemptCount: 1, completedAt: at(2) });
    expect(byId.get(second)!.attempts).toHaveLength(1);
  });

  it("leaves each endpoint's failing_since as the attempts one by one would: cleared by a success, set by the first failure after it", async () => {
    const recovering = await endpointWithDeliveries(4);
    const stillFailing = await endpointWithDeliveries(2, at(-100));
    const recovered = await endpointWithDeliveries(2, at(-100));
    const [r1, r2, r3, r4] = recovering.deliveryIds as [string, string, string, string];
    const [f1, f2] = stillFailing.deliveryIds as [string, string];
    const [s1, s2] = recovered.deliveryIds as [string, string];
    // Interleaved across endpoints, as a batch of many workers' attempts comes.
    expect(
      await record([
        made(r1, 'retry', 1),
        made(f1, 'retry', 1),
        made(s1, 'retry', 1),
        made(r2, 'succeeded', 2),
        made(s2, 'succeeded', 2),
        made(r3, 'failed', 3),
        made(f2, 'failed', 3),
        made(r4, 'retry', 4),
      ]),
    ).toEqual(Array(8).fill(true));
    const failingSince = async (endpointId: string) =>
      (await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId } })).failingSince;
    expect(await failingSince(recovering.endpointId)).toEqual(at(3));
    expect(await failingSince(stillFailing.endpointId)).toEqual(at(-100));
    expect(await failingSince(recovered.endpointId)).toBeNull();
  });

  it('disables an endpoint once, with one audit event, however many of its attempts ask to', async () => {
    const gone = await endpointWithDeliveries(3);
    const alreadyDisabled = await endpointWithDeliveries(1);
    await env.services.db.webhookEndpoint.update({ where: { id: alreadyDisabled.endpointId }, data: { enabled: false } });
    const [g1, g2, g3] = gone.deliveryIds as [string, string, string];
    const disabling = (deliveryId: string, endpoint: typeof gone, seconds: number): Attempt => ({
      deliveryId,
      attempt: 1,
      resolution: 'endpoint-disabled',
      attemptedAt: at(seconds),
      url: endpoint.url,
      endpointId: endpoint.endpointId,
    });
    expect(
      await record([
        made(g1, 'retry', 1),
        disabling(g2, gone, 2),
        disabling(alreadyDisabled.deliveryIds[0]!, alreadyDisabled, 2),
        disabling(g3, gone, 3),
      ]),
    ).toEqual([true, true, true, true]);

    const endpoints = await env.services.db.webhookEndpoint.findMany({
      where: { id: { in: [gone.endpointId, alreadyDisabled.endpointId] } },
    });
    const byId = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
    expect(byId.get(gone.endpointId)).toMatchObject({
      enabled: false,
      disabledReason: `gone at ${at(2).toISOString()}`,
      failingSince: at(1),
    });
    expect(byId.get(alreadyDisabled.endpointId)).toMatchObject({ enabled: false, disabledReason: null, failingSince: null });
    const disablings = (await readChain(env.services.db, org.orgId)).filter(
      (event) => event.type === 'webhook.updated' && event.data.enabled === false,
    );
    expect(disablings.map((event) => event.data.endpointId)).toEqual([gone.endpointId]);
  });
});
