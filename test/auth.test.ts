import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, type Scope } from '../src/modules/orgs/tenant.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let pendingId: string;

const LIMIT = 3;

beforeAll(async () => {
  env = await createTestEnv({ FREE_TIER_MONTHLY_APPROVALS: String(LIMIT) });
  org = await env.createOrg();
  pendingId = (await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(201)).body.id;
});
afterAll(() => env.close());

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
}

describe('authentication', () => {
  it.each([
    ['no header', undefined],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['bearer without a key', 'Bearer'],
    ['bearer with two tokens', 'Bearer a b'],
    ['garbage key', 'Bearer not-a-key'],
    ['well-formed unknown key', `Bearer agk_${'A'.repeat(43)}`],
  ])('answers 401 with www-authenticate for %s', async (_name, header) => {
    const request = env.http.get(`/v1/approvals/${pendingId}`);
    if (header) request.set('authorization', header);
    const res = await request;
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('answers 401 once a key is revoked', async () => {
    const key = await env.createKey(org.orgId, SCOPES);
    await env.http.get(`/v1/approvals/${pendingId}`).set('authorization', `Bearer ${key.key}`).expect(200);
    await env.services.orgs.revokeApiKey(key.id);
    const res = await env.http.get(`/v1/approvals/${pendingId}`).set('authorization', `Bearer ${key.key}`);
    expectProblem(res, 401, 'unauthorized');
  });

  it('accepts the scheme case-insensitively', async () => {
    await env.http.get(`/v1/approvals/${pendingId}`).set('authorization', `bearer ${org.key}`).expect(200);
  });
});

describe('scopes', () => {
  const operations: [Scope, 'get' | 'post' | 'put' | 'delete', () => string, object?][] = [
    ['approvals:write', 'post', () => '/v1/approvals', { action: 'x', payload: {}, policyKey: 'p' }],
    ['approvals:read', 'get', () => `/v1/approvals/${pendingId}`],
    ['approvals:decide', 'post', () => `/v1/approvals/${pendingId}/decision`, { verdict: 'approved' }],
    ['policies:write', 'put', () => '/v1/policies/p', {}],
    ['policies:write', 'delete', () => '/v1/policies/p'],
    ['policies:read', 'get', () => '/v1/policies'],
    ['policies:read', 'get', () => '/v1/policies/p'],
  ];

  it.each(operations)('answers 403 without %s for %s', async (scope, method, path, body) => {
    const key = await env.createKey(
      org.orgId,
      SCOPES.filter((s) => s !== scope),
    );
    const request = env.http[method](path()).set('authorization', `Bearer ${key.key}`);
    const res = await (body ? request.send(body) : request);
    expectProblem(res, 403, 'forbidden');
    expect(res.body.detail).toContain(scope);
  });

  it('checks the scope before the id exists', async () => {
    const key = await env.createKey(org.orgId, ['approvals:write']);
    const res = await env.http.get('/v1/approvals/not-even-a-uuid').set('authorization', `Bearer ${key.key}`);
    expectProblem(res, 403, 'forbidden');
  });
});

describe('free-tier monthly limit and the order 401, 403, 402, 422', () => {
  it('answers 402 past the limit, lets idempotent replays through, and spares paid plans', async () => {
    const free = await env.createOrg({ plan: 'free' });
    const first = await free
      .request('post', '/v1/approvals')
      .send({ action: 'a', payload: {}, policyKey: 'p', idempotencyKey: 'k1' })
      .expect(201);
    for (let i = 1; i < LIMIT; i++)
      await free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' }).expect(201);

    const over = await free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' });
    expectProblem(over, 402, 'payment_required');
    const replay = await free
      .request('post', '/v1/approvals')
      .send({ action: 'a', payload: {}, policyKey: 'p', idempotencyKey: 'k1' })
      .expect(201);
    expect(replay.body.id).toBe(first.body.id);

    await env.services.orgs.setPlan(free.orgId, 'pro');
    await free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' }).expect(201);
    await env.services.orgs.setPlan(free.orgId, 'free');
    expectProblem(await free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' }), 402, 'payment_required');
  });

  it('never lets concurrent creates past the limit', async () => {
    const free = await env.createOrg({ plan: 'free' });
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' })),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(LIMIT).fill(201), ...Array(12 - LIMIT).fill(402)]);
    expect(await env.services.db.approval.count({ where: { orgId: free.orgId } })).toBe(LIMIT);
  });

  it('orders 401 before 403 before 402 before 422', async () => {
    const free = await env.createOrg({ plan: 'free' });
    for (let i = 0; i < LIMIT; i++)
      await free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' }).expect(201);
    const invalidBody = { action: '', payload: 'nope' };

    expectProblem(await env.http.post('/v1/approvals').set('authorization', 'Bearer nope').send(invalidBody), 401, 'unauthorized');
    const readOnly = await env.createKey(free.orgId, ['approvals:read']);
    expectProblem(await env.http.post('/v1/approvals').set('authorization', `Bearer ${readOnly.key}`).send(invalidBody), 403, 'forbidden');
    expectProblem(await free.request('post', '/v1/approvals').send(invalidBody), 402, 'payment_required');
    expectProblem(
      await free.request('post', '/v1/approvals').set('content-type', 'application/json').send('{not json'),
      402,
      'payment_required',
    );
    expectProblem(await org.request('post', '/v1/approvals').send(invalidBody), 422, 'validation_failed');
  });
});
