import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { createTestEnv, useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

describe('operations endpoints', () => {
  it('answers /healthz and /readyz without auth', async () => {
    expect((await env.http.get('/healthz').expect(200)).body).toEqual({ status: 'ok' });
    expect((await env.http.get('/readyz').expect(200)).body).toEqual({ status: 'ready', checks: { postgres: true, redis: true } });
  });

  it('reports 503 from /readyz while Redis is unreachable, and still serves the API from Postgres', async () => {
    const broken = await createTestEnv({ REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      expect((await broken.http.get('/readyz').expect(503)).body).toMatchObject({ checks: { postgres: true, redis: false } });
      const brokenOrg = await broken.createOrg();
      const created = await brokenOrg.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(201);
      await brokenOrg.asReviewer('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'approved' }).expect(200);
    } finally {
      await broken.close();
    }
  });

  it('serves an OpenAPI 3.1 document generated from the validation schemas', async () => {
    const doc = (await env.http.get('/openapi.json').expect(200)).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/approvals', '/v1/approvals/{id}', '/v1/approvals/{id}/decision', '/v1/policies/{key}']),
    );
    const create = doc.paths['/v1/approvals'].post;
    expect(create.requestBody.content['application/json'].schema.$ref).toBe('#/components/schemas/ApprovalCreateInput');
    expect(doc.components.schemas.ApprovalCreateInput.required).toEqual(['action', 'payload', 'policyKey']);
    expect(doc.components.schemas.ApprovalCreateInput.properties.action).toMatchObject({ minLength: 1, maxLength: 200 });
    expect(Object.keys(create.responses)).toEqual(['200', '201', '401', '402', '403', '422']);
    expect(doc.paths['/v1/approvals/{id}'].get.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'wait', in: 'query', schema: expect.objectContaining({ minimum: 1, maximum: 30 }) }),
      ]),
    );
  });
});

describe('errors and logging', () => {
  it('answers an unknown route with 404 problem+json', async () => {
    for (const path of ['/v1/nothing-here', '/v1/approvals/a/b/c', '/elsewhere']) {
      const res = await org.request('get', path).expect(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 404, code: 'not_found' });
    }
  });

  it('echoes a request id, or makes one, and logs one line per request without the key', async () => {
    const given = await org.request('get', '/v1/policies').set('x-request-id', 'trace-123').expect(200);
    expect(given.headers['x-request-id']).toBe('trace-123');
    const made = await org.request('get', '/v1/policies').expect(200);
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const line = env.logs.find((entry) => (entry.req as { id?: string } | undefined)?.id === 'trace-123');
    expect(line).toMatchObject({ msg: 'request completed', res: { statusCode: 200 } });
    expect(JSON.stringify(env.logs)).not.toContain(org.key);
  });

  it('answers 500 without internals when the database fails underneath', async () => {
    const damaged = await createTestEnv();
    try {
      const damagedOrg = await damaged.createOrg();
      await damaged.services.db.$executeRawUnsafe('DROP TABLE policies');
      const res = await damagedOrg.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(500);
      expect(res.body).toEqual({
        type: expect.any(String),
        title: 'Internal server error',
        status: 500,
        code: 'internal',
        detail: expect.any(String),
      });
      expect(JSON.stringify(res.body)).not.toMatch(/policies|relation|prisma|at /i);
    } finally {
      await damaged.close();
    }
  });
});

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/approval_gate',
      REDIS_URL: 'redis://127.0.0.1:6379',
      FREE_TIER_MONTHLY_APPROVALS: 100,
      ORPHAN_TIMEOUT_SECONDS: 86400,
    });
  });

  it('treats an empty variable as unset', () => {
    const config = loadConfig({ SMTP_URL: '', ADMIN_USER: '', PORT: '' });
    expect([config.SMTP_URL, config.ADMIN_USER, config.PORT]).toEqual([undefined, undefined, 3000]);
  });

  it('names every bad variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'nowhere', FREE_TIER_MONTHLY_APPROVALS: '-1' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'nowhere', FREE_TIER_MONTHLY_APPROVALS: '-1' });
    } catch (error) {
      expect((error as Error).message).toMatch(/PORT/);
      expect((error as Error).message).toMatch(/DATABASE_URL/);
      expect((error as Error).message).toMatch(/FREE_TIER_MONTHLY_APPROVALS/);
    }
  });
});
