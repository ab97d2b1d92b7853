import webpush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { eventually } from './support/eventually.js';
import { createMember, type TestMember } from './support/members.js';
import { startPushService, type PushServiceStandIn } from './support/push-service.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const vapid = webpush.generateVAPIDKeys();
let pushService: PushServiceStandIn;
let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let alice: TestMember;
let bob: TestMember;
let vic: TestMember;

beforeAll(async () => {
  pushService = await startPushService();
  env = await createTestEnv({
    VAPID_PUBLIC_KEY: vapid.publicKey,
    VAPID_PRIVATE_KEY: vapid.privateKey,
    VAPID_SUBJECT: 'mailto:ops@acme.test',
    OUTBOX_POLL_INTERVAL_MS: '100',
    PUBLIC_URL: 'https://gate.acme.test',
  });
  org = await env.createOrg();
  [alice, bob, vic] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
  ]);
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'push-notify']);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await pushService?.close();
});

const subscribe = (member: TestMember, device: { endpoint: string; keys: unknown }) =>
  member.request('post', '/v1/session/push-subscriptions').send({ endpoint: device.endpoint, expirationTime: null, keys: device.keys });

async function requestApproval(extra: Record<string, unknown> = {}) {
  return (
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 120, card: '4242' }, policyKey: 'refunds', agent: 'billing-bot', ...extra })
      .expect(201)
  ).body as { id: string };
}

describe('turning Web Push on and off for a device', () => {
  it('gives the VAPID public key, keeps a subscription per device and removes it on request', async () => {
    const settings = await bob.request('get', '/v1/session/push').expect(200);
    expect(settings.body).toEqual({ publicKey: vapid.publicKey, devices: 0 });
    const device = pushService.device();
    const created = await subscribe(bob, device).expect(201);
    expect(created.body).toEqual({ id: expect.any(String), createdAt: expect.stringMatching(/Z$/) });
    // The same device again (the browser subscribing anew) is still one device.
    await subscribe(bob, device).expect(201);
    expect((await bob.request('get', '/v1/session/push').expect(200)).body.devices).toBe(1);
    await bob.request('delete', '/v1/session/push-subscriptions').send({ endpoint: device.endpoint }).expect(204);
    await bob.request('delete', '/v1/session/push-subscriptions').send({ endpoint: device.endpoint }).expect(404);
    expect((await bob.request('get', '/v1/session/push').expect(200)).body.devices).toBe(0);
  });

  it('refuses an API key, keys that are not a P-256 key and a 16-byte secret, and an endpoint that is not a URL', async () => {
    const device = pushService.device();
    await org.request('post', '/v1/session/push-subscriptions').send({ endpoint: device.endpoint, keys: device.keys }).expect(401);
    const bad = await bob
      .request('post', '/v1/session/push-subscriptions')
      .send({ endpoint: 'javascript:alert(1)', keys: { p256dh: 'AAAA', auth: 'x'.repeat(40) } })
      .expect(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['endpoint', 'keys.auth', 'keys.p256dh']);
  });
});

describe('a pending request', () => {
  it('is pushed, encrypted to each device, to the members who may decide it, and opens its console page', async () => {
    const [phone, laptop, viewers] = [pushService.device(), pushService.device(), pushService.device()];
    await subscribe(alice, phone).expect(201);
    await subscribe(alice, laptop).expect(201);
    await subscribe(vic, viewers).expect(201);
    const started = Date.now();
    const approval = await requestApproval();
    const delivered = await eventually(() => {
      const mine = pushService.deliveries.filter((delivery) => (delivery.message as { tag: string }).tag === `approval-${approval.id}`);
      return mine.length >= 2 ? mine : null;
    });
    // The figure of docs/members-and-channels.md: from creation to the push service, at low load.
    console.log(`push: creation to push ${Math.min(...delivered.map((delivery) => delivery.at)) - started} ms`);
    expect(delivered.map((delivery) => delivery.device).sort()).toEqual(
      [phone, laptop].map((device) => device.endpoint.split('/').pop()).sort(),
    );
    expect(delivered[0]!.message).toEqual({
      title: 'Approval needed: refund',
      body: expect.stringContaining('Agent: billing-bot · Policy: refunds'),
      url: `https://gate.acme.test/console/approvals/${approval.id}`,
      tag: `approval-${approval.id}`,
    });
    // Never the request's payload: deciding needs the console.
    expect(JSON.stringify(delivered[0]!.message)).not.toContain('4242');
    expect(delivered[0]!.vapid).toMatchObject({ aud: pushService.url, sub: 'mailto:ops@acme.test' });
    expect(delivered[0]!.urgency).toBe('high');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pushService.deliveries.filter((delivery) => delivery.device === viewers.endpoint.split('/').pop())).toEqual([]);
    // Once each: the claims of approval_notifications.
    expect(
      pushService.deliveries.filter((delivery) => (delivery.message as { tag: string }).tag === `approval-${approval.id}`),
    ).toHaveLength(2);
  });

  it("forgets a device whose push service answers 410 or 404, and still reaches the member's other devices", async () => {
    const [kept, expired, unknown] = [pushService.device(), pushService.device('expired'), pushService.device('unknown')];
    for (const device of [kept, expired, unknown]) await subscribe(bob, device).expect(201);
    pushService.answer('expired', 410);
    pushService.answer('unknown', 404);
    const approval = await requestApproval();
    await eventually(() =>
      pushService.deliveries.find(
        (delivery) =>
          (delivery.message as { tag: string }).tag === `approval-${approval.id}` && delivery.device === kept.endpoint.split('/').pop(),
      ),
    );
    await eventually(async () => (await env.services.db.pushSubscription.count({ where: { memberId: bob.id } })) === 1);
    const left = await env.services.db.pushSubscription.findMany({ where: { memberId: bob.id } });
    expect(left.map((device) => device.endpoint)).toEqual([kept.endpoint]);
  });

  it('is not pushed to the member it acts for, who may not decide it', async () => {
    const device = pushService.device();
    const carol = await createMember(env, org, 'reviewer', 'carol@acme.test');
    await subscribe(carol, device).expect(201);
    const approval = await requestApproval({ onBehalfOf: 'carol@acme.test' });
    await eventually(
      async () =>
        (await env.services.db.consumerTask.count({ where: { orgId: org.orgId, consumer: 'push-notify', status: 'pending' } })) === 0,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      pushService.deliveries.filter(
        (delivery) =>
          delivery.device === device.endpoint.split('/').pop() && (delivery.message as { tag: string }).tag === `approval-${approval.id}`,
      ),
    ).toEqual([]);
  });
});
