import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryStatus } from '../src/generated/prisma/client.js';
import { SCOPES, type Scope } from '../src/modules/orgs/tenant.js';
import { chainProblem, readChain } from './support/audit-chain.js';
import { webhookDeliveryJob } from '../src/consumers/webhooks/webhook-delivery.js';
import { createTestEnv, useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const HOOK_URL = 'https://203.0.113.10/hooks';
const EVENTS = ['approval.approved', 'approval.rejected'];
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const VIEW_FIELDS = ['createdAt', 'enabled', 'events', 'id', 'url'];
const DAY_MS = 24 * 60 * 60 * 1000;

async function createEndpoint(client: TestOrg = org, body: Record<string, unknown> = {}) {
  const res = await client
    .request('post', '/v1/webhooks')
    .send({ url: HOOK_URL, events: EVENTS, ...body })
    .expect(201);
  return res.body as { id: string; url: string; events: string[]; enabled: boolean; createdAt: string; secret: string };
}

interface AttemptRow {
  attemptedAt: Date;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
}

/** A delivery as the relay and the delivery worker would have left it, written straight to the tables. */
async function insertDelivery(
  client: TestOrg,
  endpointId: string,
  { createdAt, status, attempts = [] }: { createdAt: Date; status: DeliveryStatus; attempts?: AttemptRow[] },
) {
  const db = env.services.db;
  const eventId = randomUUID();
  await db.outboxMessage.create({
    data: { orgId: client.orgId, eventId, eventType: 'approval.approved', body: { id: eventId }, createdAt, relayedAt: createdAt },
  });
  const delivery = await db.webhookDelivery.create({
    data: {
      orgId: client.orgId,
      endpointId,
      eventId,
      eventType: 'approval.approved',
      status,
      attemptCount: attempts.length,
      createdAt,
      nextAttemptAt: status === 'pending' ? new Date(createdAt.getTime() + 60_000) : null,
      completedAt: status === 'pending' ? null : new Date(createdAt.getTime() + 5_000),
    },
  });
  await db.webhookAttempt.createMany({ data: attempts.map((attempt) => ({ deliveryId: delivery.id, ...attempt })) });
  return delivery;
}

const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000);

/** A problem body with the given ids replaced, to compare answers about different ids. */
function withoutIds(body: Record<string, unknown>, ...ids: string[]) {
  return { ...body, detail: ids.reduce((detail, id) => detail.replaceAll(id, '<id>'), String(body.detail)) };
}

describe('webhook endpoints', () => {
  it('registers an endpoint and shows its secret only in the creation response', async () => {
    const created = await createEndpoint();
    expect(Object.keys(created).sort()).toEqual([...VIEW_FIELDS, 'secret'].sort());
    expect(created).toMatchObject({ id: expect.any(String), url: HOOK_URL, events: EVENTS, enabled: true });
    expect(Date.parse(created.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(created.secret).toMatch(SECRET);
    expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const { secret: _secret, ...view } = created;
    const read = await org.request('get', `/v1/webhooks/${created.id}`).expect(200);
    expect(read.body).toEqual(view);
    const list = await org.request('get', '/v1/webhooks').expect(200);
    expect(list.body.endpoints).toContainEqual(view);
  });

  it('lists endpoints oldest first, without secrets', async () => {
    const own = await env.createOrg();
    const first = await createEndpoint(own);
    const second = await createEndpoint(own, { events: ['approval.orphaned'] });
    const list = await own.request('get', '/v1/webhooks').expect(200);
    expect(Object.keys(list.body)).toEqual(['endpoints']);
    expect(list.body.endpoints.map((e: { id: string }) => e.id)).toEqual([first.id, second.id]);
    for (const endpoint of list.body.endpoints) expect(Object.keys(endpoint).sort()).toEqual(VIEW_FIELDS);
  });

  it('gives every endpoint its own secret', async () => {
    const [a, b] = await Promise.all([createEndpoint(), createEndpoint()]);
    expect(a.secret).not.toBe(b.secret);
  });

  it('accepts loopback and private addresses outside production by default', async () => {
    await createEndpoint(org, { url: 'http://127.0.0.1:8080/hooks' });
    await createEndpoint(org, { url: 'http://localhost/hooks' });
  });

  it('changes url, events and enabled, answering without the secret', async () => {
    const { id, createdAt } = await createEndpoint();
    const events = await org
      .request('patch', `/v1/webhooks/${id}`)
      .send({ events: ['approval.expired'] })
      .expect(200);
    expect(events.body).toEqual({ id, url: HOOK_URL, events: ['approval.expired'], enabled: true, createdAt });

    const both = await org.request('patch', `/v1/webhooks/${id}`).send({ url: 'https://203.0.113.20/new', enabled: false }).expect(200);
    expect(both.body).toEqual({ id, url: 'https://203.0.113.20/new', events: ['approval.expired'], enabled: false, createdAt });
    expect((await org.request('get', `/v1/webhooks/${id}`).expect(200)).body).toEqual(both.body);
  });

  it('clears what the service recorded about failures when an endpoint is re-enabled', async () => {
    const { id } = await createEndpoint();
    await env.services.db.webhookEndpoint.update({
      where: { id },
      data: { enabled: false, disabledReason: 'answered 410 Gone', failingSince: secondsAgo(3600) },
    });
    const res = await org.request('patch', `/v1/webhooks/${id}`).send({ enabled: true }).expect(200);
    expect(res.body.enabled).toBe(true);
    const row = await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
  });

  it('deletes an endpoint with its deliveries', async () => {
    const { id } = await createEndpoint();
    await insertDelivery(org, id, { createdAt: secondsAgo(10), status: 'succeeded' });
    await org.request('delete', `/v1/webhooks/${id}`).expect(204, '');
    await org.request('get', `/v1/webhooks/${id}`).expect(404);
    await org.request('delete', `/v1/webhooks/${id}`).expect(404);
    expect(await env.services.db.webhookDelivery.count({ where: { endpointId: id } })).toBe(0);
  });

  it('rotates the secret, keeping the previous one for 24 hours', async () => {
    const { id, secret: original } = await createEndpoint();
    const rotated = await org.request('post', `/v1/webhooks/${id}/rotate-secret`).expect(200);
    expect(Object.keys(rotated.body).sort()).toEqual([...VIEW_FIELDS, 'secret'].sort());
    expect(rotated.body.secret).toMatch(SECRET);
    expect(rotated.body.secret).not.toBe(original);

    const row = await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ secret: rotated.body.secret, previousSecret: original });
    expect(Math.abs(row.previousSecretExpiresAt!.getTime() - (Date.now() + DAY_MS))).toBeLessThan(10_000);
    expect(Object.keys((await org.request('get', `/v1/webhooks/${id}`).expect(200)).body).sort()).toEqual(VIEW_FIELDS);

    const again = await org.request('post', `/v1/webhooks/${id}/rotate-secret`).expect(200);
    const reread = await env.services.db.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    expect(reread).toMatchObject({ secret: again.body.secret, previousSecret: rotated.body.secret });
  });

  it('appends an audit event for every change, with no secret in it', async () => {
    const own = await env.createOrg();
    const { id, secret } = await createEndpoint(own);
    await own
      .request('patch', `/v1/webhooks/${id}`)
      .send({ events: ['approval.expired'], enabled: false })
      .expect(200);
    const rotated = await own.request('post', `/v1/webhooks/${id}/rotate-secret`).expect(200);
    await own.request('delete', `/v1/webhooks/${id}`).expect(204);

    const chain = await readChain(env.services.db, own.orgId);
    expect(chainProblem(chain)).toBeNull();
    expect(chain.map((event) => event.type)).toEqual(['webhook.created', 'webhook.updated', 'webhook.secret_rotated', 'webhook.deleted']);
    expect(chain.map((event) => event.actor)).toEqual(Array(4).fill(JSON.stringify({ type: 'api_key', id: own.keyId })));
    expect(chain.map((event) => event.data)).toEqual([
      { endpointId: id, url: HOOK_URL, events: EVENTS, enabled: true },
      { endpointId: id, events: ['approval.expired'], enabled: false },
      { endpointId: id, previousSecretExpiresAt: expect.any(String) },
      { endpointId: id, url: HOOK_URL },
    ]);
    for (const text of [JSON.stringify(chain), JSON.stringify(env.logs)]) {
      expect(text).not.toContain('whsec_');
      expect(text).not.toContain(secret.slice('whsec_'.length));
      expect(text).not.toContain(rotated.body.secret.slice('whsec_'.length));
    }
  });

  it('describes every operation in the OpenAPI document', async () => {
    const { body } = await env.http.get('/openapi.json').expect(200);
    expect(Object.keys(body.paths['/v1/webhooks']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(body.paths['/v1/webhooks/{id}']).sort()).toEqual(['delete', 'get', 'patch']);
    expect(body.paths['/v1/webhooks/{id}/rotate-secret']).toHaveProperty('post');
    expect(body.paths['/v1/webhooks/{id}/deliveries']).toHaveProperty('get');
    expect(body.paths['/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver'].post.responses).toHaveProperty('409');
  });
});

describe('validation', () => {
  it.each([
    ['a missing url', { url: undefined }, 'url'],
    ['a url that is not a string', { url: 42 }, 'url'],
    ['a relative url', { url: '/hooks' }, 'url'],
    ['an ftp url', { url: 'ftp://203.0.113.10/hooks' }, 'url'],
    ['a url with credentials', { url: 'https://user:pass@203.0.113.10/hooks' }, 'url'],
    ['a url over 2048 characters', { url: `https://203.0.113.10/${'a'.repeat(2048)}` }, 'url'],
    ['missing events', { events: undefined }, 'events'],
    ['empty events', { events: [] }, 'events'],
    ['events that are not an array', { events: 'approval.approved' }, 'events'],
    ['an unknown event type', { events: ['approval.approved', 'approval.created'] }, 'events.1'],
    ['a duplicate event type', { events: ['approval.approved', 'approval.rejected', 'approval.approved'] }, 'events.2'],
    ['an unknown field', { secret: 'whsec_mine' }, 'secret'],
  ])('refuses to register with %s', async (_name, body, path) => {
    const res = await org
      .request('post', '/v1/webhooks')
      .send({ url: HOOK_URL, events: EVENTS, ...body })
      .expect(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
  });

  it('names the guard reason for a refused url', async () => {
    const res = await org.request('post', '/v1/webhooks').send({ url: 'ftp://203.0.113.10/', events: EVENTS }).expect(422);
    expect(res.body.errors).toEqual([{ path: 'url', message: 'url must use http or https' }]);
  });

  it('refuses a body that is not JSON', async () => {
    const res = await org.request('post', '/v1/webhooks').set('content-type', 'application/json').send('{"url":').expect(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['body']);
  });

  it.each([
    ['no field', {}, 'body'],
    ['a relative url', { url: 'hooks' }, 'url'],
    ['empty events', { events: [] }, 'events'],
    ['a duplicate event type', { events: ['approval.expired', 'approval.expired'] }, 'events.1'],
    ['a non-boolean enabled', { enabled: 'yes' }, 'enabled'],
    ['a misspelt field', { enable: false }, 'enable'],
  ])('refuses a change with %s', async (_name, body, path) => {
    const { id } = await createEndpoint();
    const res = await org.request('patch', `/v1/webhooks/${id}`).send(body).expect(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect((await org.request('get', `/v1/webhooks/${id}`).expect(200)).body).toMatchObject({
      url: HOOK_URL,
      events: EVENTS,
      enabled: true,
    });
  });

  it.each(['0', '101', 'ten', '1.5'])('refuses limit=%s on the deliveries log', async (limit) => {
    const { id } = await createEndpoint();
    const res = await org.request('get', `/v1/webhooks/${id}/deliveries?limit=${limit}`).expect(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['limit']);
  });
});

describe('deliveries', () => {
  let endpointId: string;
  let oldest: { id: string; eventId: string; createdAt: Date; completedAt: Date | null };
  let middle: { id: string };
  let newest: { id: string };
  const failures: AttemptRow[] = [
    { attemptedAt: secondsAgo(50), statusCode: 500, durationMs: 120, error: 'answered 500', responseBody: 'oops' },
    { attemptedAt: secondsAgo(90), statusCode: null, durationMs: 15_000, error: 'timed out after 15 s', responseBody: null },
  ];

  beforeAll(async () => {
    endpointId = (await createEndpoint()).id;
    // Attempts written newest first, so the order in the answer is the query's doing.
    oldest = await insertDelivery(org, endpointId, { createdAt: secondsAgo(100), status: 'failed', attempts: failures });
    middle = await insertDelivery(org, endpointId, {
      createdAt: secondsAgo(40),
      status: 'succeeded',
      attempts: [{ attemptedAt: secondsAgo(39), statusCode: 204, durationMs: 30, error: null, responseBody: '' }],
    });
    newest = await insertDelivery(org, endpointId, { createdAt: secondsAgo(5), status: 'pending' });
    const elsewhere = await createEndpoint();
    await insertDelivery(org, elsewhere.id, { createdAt: secondsAgo(1), status: 'pending' });
  });

  it('lists an endpoint deliveries newest first, each with its attempts oldest first', async () => {
    const res = await org.request('get', `/v1/webhooks/${endpointId}/deliveries`).expect(200);
    expect(Object.keys(res.body)).toEqual(['deliveries']);
    expect(res.body.deliveries.map((d: { id: string }) => d.id)).toEqual([newest.id, middle.id, oldest.id]);
    expect(res.body.deliveries[2]).toEqual({
      id: oldest.id,
      eventId: oldest.eventId,
      eventType: 'approval.approved',
      status: 'failed',
      attemptCount: 2,
      nextAttemptAt: null,
      createdAt: oldest.createdAt.toISOString(),
      completedAt: oldest.completedAt!.toISOString(),
      attempts: failures.toReversed().map((attempt) => ({ ...attempt, attemptedAt: attempt.attemptedAt.toISOString() })),
    });
    expect(res.body.deliveries[0]).toMatchObject({ status: 'pending', attemptCount: 0, attempts: [], completedAt: null });
    expect(res.body.deliveries[0].nextAttemptAt).toEqual(expect.any(String));
  });

  it('honours limit', async () => {
    const res = await org.request('get', `/v1/webhooks/${endpointId}/deliveries?limit=2`).expect(200);
    expect(res.body.deliveries.map((d: { id: string }) => d.id)).toEqual([newest.id, middle.id]);
  });

  it('redelivers a finished delivery now, as its next attempt', async () => {
    const before = Date.now();
    const res = await org.request('post', `/v1/webhooks/${endpointId}/deliveries/${oldest.id}/redeliver`).expect(202);
    expect(res.body).toMatchObject({ id: oldest.id, status: 'pending', attemptCount: 2, completedAt: null });
    expect(res.body.attempts).toHaveLength(2);
    expect(Date.parse(res.body.nextAttemptAt)).toBeGreaterThanOrEqual(before - 5);

    const row = await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: oldest.id } });
    expect(row).toMatchObject({ status: 'pending', attemptCount: 2, completedAt: null });
    expect(row.nextAttemptAt!.toISOString()).toBe(res.body.nextAttemptAt);
    const job = await env.services.jobs.queue(webhookDeliveryJob).getJob(`${oldest.id}-3`);
    expect(job?.data).toEqual({ deliveryId: oldest.id, attempt: 3 });

    const listed = await org.request('get', `/v1/webhooks/${endpointId}/deliveries`).expect(200);
    expect(listed.body.deliveries[2]).toEqual(res.body);
  });

  it('answers 404 for a delivery of another endpoint', async () => {
    const other = await createEndpoint();
    await org.request('post', `/v1/webhooks/${other.id}/deliveries/${middle.id}/redeliver`).expect(404);
  });

  it('answers 409 when the endpoint is disabled', async () => {
    const { id } = await createEndpoint();
    const delivery = await insertDelivery(org, id, { createdAt: secondsAgo(3), status: 'failed' });
    await org.request('patch', `/v1/webhooks/${id}`).send({ enabled: false }).expect(200);
    const res = await org.request('post', `/v1/webhooks/${id}/deliveries/${delivery.id}/redeliver`).expect(409);
    expect(res.body).toMatchObject({ code: 'conflict', detail: expect.stringMatching(/disabled/) });
    expect(await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).toMatchObject({ status: 'failed' });
  });
});

/** Every operation, its scope, and its path with `:id` and `:deliveryId` to fill in. */
const ROUTES: ['get' | 'post' | 'patch' | 'delete', string, Scope, object?][] = [
  ['post', '/v1/webhooks', 'webhooks:write', { url: HOOK_URL, events: EVENTS }],
  ['get', '/v1/webhooks', 'webhooks:read'],
  ['get', '/v1/webhooks/:id', 'webhooks:read'],
  ['patch', '/v1/webhooks/:id', 'webhooks:write', { enabled: true }],
  ['delete', '/v1/webhooks/:id', 'webhooks:write'],
  ['post', '/v1/webhooks/:id/rotate-secret', 'webhooks:write'],
  ['get', '/v1/webhooks/:id/deliveries', 'webhooks:read'],
  ['post', '/v1/webhooks/:id/deliveries/:deliveryId/redeliver', 'webhooks:write'],
];
const ROUTES_WITH_ID = ROUTES.filter(([, path]) => path.includes(':id'));

describe('access', () => {
  let endpointId: string;
  let deliveryId: string;
  const fill = (path: string, id = endpointId, delivery = deliveryId) => path.replace(':id', id).replace(':deliveryId', delivery);

  beforeAll(async () => {
    endpointId = (await createEndpoint()).id;
    deliveryId = (await insertDelivery(org, endpointId, { createdAt: secondsAgo(1), status: 'failed' })).id;
  });

  it.each(ROUTES)('%s %s answers 401 without an API key', async (method, path) => {
    const res = await env.http[method](fill(path));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it.each(ROUTES)('%s %s answers 403 without %s', async (method, path, scope, body) => {
    const key = await env.createKey(
      org.orgId,
      SCOPES.filter((s) => s !== scope),
    );
    const request = env.http[method](fill(path)).set('authorization', `Bearer ${key.key}`);
    const res = await (body ? request.send(body) : request);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
    expect(res.body.detail).toContain(scope);
  });

  it.each(ROUTES_WITH_ID)('%s %s answers 404 for an unknown or non-UUID id', async (method, path, _scope, body) => {
    const targets = [fill(path, randomUUID()), fill(path, 'not-a-uuid')];
    if (path.includes(':deliveryId')) targets.push(fill(path, endpointId, randomUUID()), fill(path, endpointId, 'not-a-uuid'));
    for (const target of targets) {
      const request = org.request(method, target);
      const res = await (body ? request.send(body) : request);
      expect(res.status, target).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
  });

  it.each(ROUTES_WITH_ID)(
    '%s %s answers 404 for another organization endpoint, as for an unknown one',
    async (method, path, _scope, body) => {
      const other = await env.createOrg();
      const theirs = await createEndpoint(other);
      const theirDelivery = await insertDelivery(other, theirs.id, { createdAt: secondsAgo(1), status: 'failed' });
      const unknown = [randomUUID(), randomUUID()] as const;
      const send = (id: string, delivery: string) => {
        const request = org.request(method, fill(path, id, delivery));
        return body ? request.send(body) : request;
      };
      const crossOrg = await send(theirs.id, theirDelivery.id);
      const missing = await send(...unknown);
      expect(crossOrg.status).toBe(404);
      expect(withoutIds(crossOrg.body, theirs.id, theirDelivery.id)).toEqual(withoutIds(missing.body, ...unknown));
      await other.request('get', `/v1/webhooks/${theirs.id}`).expect(200);
      expect(await env.services.db.webhookDelivery.findUniqueOrThrow({ where: { id: theirDelivery.id } })).toMatchObject({
        status: 'failed',
      });
    },
  );
});

describe('SSRF guard in production', () => {
  let guarded: TestEnv;
  let open: TestEnv;
  let guardedOrg: TestOrg;
  let openOrg: TestOrg;

  beforeAll(async () => {
    [guarded, open] = await Promise.all([
      createTestEnv({ NODE_ENV: 'production' }),
      createTestEnv({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }),
    ]);
    [guardedOrg, openOrg] = await Promise.all([guarded.createOrg(), open.createOrg()]);
  });
  afterAll(() => Promise.all([guarded?.close(), open?.close()]));

  it.each([
    ['loopback', 'http://127.0.0.1:8080/hooks'],
    ['a private network', 'https://10.0.0.1/hooks'],
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data'],
    ['IPv6 loopback', 'http://[::1]/hooks'],
    ['a hostname resolving to loopback', 'http://localhost/hooks'],
    ['a hostname that does not resolve', 'https://no-such-host.invalid/hooks'],
  ])('refuses %s', async (_name, url) => {
    const res = await guardedOrg.request('post', '/v1/webhooks').send({ url, events: EVENTS }).expect(422);
    expect(res.body.errors).toEqual([{ path: 'url', message: expect.stringMatching(/non-public address|does not resolve/) }]);
  });

  it.each(['https://1.1.1.1/hooks', 'https://[2606:4700:4700::1111]/hooks'])('accepts the public address %s', async (url) => {
    expect((await createEndpoint(guardedOrg, { url })).url).toBe(url);
  });

  it('refuses a change to a private address too', async () => {
    const { id } = await createEndpoint(guardedOrg, { url: 'https://[2606:4700:4700::1111]/hooks' });
    const res = await guardedOrg.request('patch', `/v1/webhooks/${id}`).send({ url: 'http://10.1.2.3/' }).expect(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['url']);
  });

  it('accepts a private address when WEBHOOK_ALLOW_PRIVATE_URLS=true', async () => {
    expect(guarded.config.NODE_ENV).toBe('production');
    const created = await createEndpoint(openOrg, { url: 'http://127.0.0.1:8080/hooks' });
    expect(created.url).toBe('http://127.0.0.1:8080/hooks');
  });
});
