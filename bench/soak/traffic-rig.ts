import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { APPROVAL_WEBHOOK_TYPES } from '../../src/modules/audit/audit-events.js';
import { expectJson, putPolicy } from '../lib/http.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './round-robin-proxy.js';
import { Traffic } from './traffic.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export interface TrafficRigOptions {
  proxyPort: number;
  webPorts: number[];
  key: string;
  reviewerKey: string;
  policyKey: string;
  /** The receiver answers 500 to one delivery in this many. */
  receiverFailEvery: number;
  creationsPerSecond: number;
  longPollers: number;
  cleanup: (close: () => Promise<unknown>) => void;
}

/**
 * What both soaks drive the web processes with: a round-robin proxy in front of them, a webhook
 * receiver subscribed to every approval event, a policy that lets small amounts through, and the
 * traffic (not started) through the proxy.
 */
export async function startTrafficRig(
  options: TrafficRigOptions,
): Promise<{ port: number; proxy: RoundRobinProxy; receiver: WebhookReceiver; traffic: Traffic }> {
  const { proxyPort: port, key } = options;
  const proxy = await startRoundRobinProxy(port, options.webPorts);
  options.cleanup(() => proxy.close());
  const receiver = await startWebhookReceiver(options.receiverFailEvery);
  options.cleanup(() => receiver.close());

  await putPolicy(port, key, options.policyKey, { rules: [{ when: 'payload.amount < 10', outcome: 'allow' }], timeoutSeconds: 86_400 });
  await expectJson(201, {
    port,
    method: 'POST',
    path: '/v1/webhooks',
    key,
    body: { url: receiver.url, events: [...APPROVAL_WEBHOOK_TYPES] },
  });

  const traffic = new Traffic({
    port,
    key,
    reviewerKey: options.reviewerKey,
    policyKey: options.policyKey,
    creationsPerSecond: options.creationsPerSecond,
    longPollers: options.longPollers,
  });
  return { port, proxy, receiver, traffic };
}

/**
 * Waits up to `seconds` for the receiver to have every webhook the organization's outbox owes it
 * (every approval event of a webhook type); returns the ids of those events, as the drain left them.
 */
export async function drainOwedWebhooks(db: pg.Client, orgId: string, receiver: WebhookReceiver, seconds: number): Promise<string[]> {
  const owed = async () =>
    (
      await db.query<{ event_id: string }>('SELECT event_id FROM outbox_messages WHERE org_id = $1 AND event_type = ANY($2)', [
        orgId,
        [...APPROVAL_WEBHOOK_TYPES],
      ])
    ).rows.map((row) => row.event_id);
  const until = Date.now() + seconds * 1000;
  let expected = await owed();
  while (expected.some((id) => !receiver.deliveries.has(id)) && Date.now() < until) {
    await sleep(1000);
    expected = await owed();
  }
  return expected;
}
