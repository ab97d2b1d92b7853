import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { text } from 'node:stream/consumers';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { errorHandler } from '../src/http/problem.js';
import { logRequests } from '../src/http/request-log.js';
import { NotFoundError } from '../src/lib/errors.js';
import { createLogger } from '../src/lib/logger.js';
import { listenOnLoopback } from './support/listen.js';
import { recordLogLines } from './support/log-lines.js';
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
  it('answers a wrong method on a known path with 405 problem+json and the methods it allows', async () => {
    const cases: [method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, allow: string][] = [
      ['delete', '/v1/approvals', 'POST, GET, HEAD, OPTIONS'],
      ['put', '/v1/approvals', 'POST, GET, HEAD, OPTIONS'],
      ['put', '/v1/approvals/00000000-0000-4000-8000-000000000000', 'GET, HEAD, OPTIONS'],
      ['get', '/v1/approvals/00000000-0000-4000-8000-000000000000/decision', 'POST, OPTIONS'],
      ['post', '/v1/policies/refunds', 'PUT, GET, HEAD, DELETE, OPTIONS'],
      ['delete', '/v1/webhooks', 'POST, GET, HEAD, OPTIONS'],
      ['delete', '/v1/audit/exports', 'POST, OPTIONS'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await org.request(method, path).expect(405);
      expect(res.headers.allow).toBe(allow);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({
        status: 405,
        code: 'method_not_allowed',
        detail: `${path} answers ${allow}, not ${method.toUpperCase()}.`,
      });
    }
    // Before authentication: the path and its methods are public knowledge.
    expect((await env.http.delete('/v1/approvals').expect(405)).headers.allow).toBe('POST, GET, HEAD, OPTIONS');
  });

  it('answers OPTIONS on a known path with the methods it allows', async () => {
    const res = await env.http.options('/v1/webhooks/00000000-0000-4000-8000-000000000000').expect(204);
    expect(res.headers.allow).toBe('GET, HEAD, PATCH, DELETE, OPTIONS');
  });

  it('answers an unknown route with 404 problem+json', async () => {
    for (const path of ['/v1/nothing-here', '/v1/approvals/a/b/c', '/elsewhere']) {
      const res = await org.request('get', path).expect(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 404, code: 'not_found' });
    }
  });

  it('echoes a request id, or makes one, and logs one line per request without the key', async () => {
    const given = await org
      .request('get', '/v1/policies?limit=1')
      .set('x-request-id', 'trace-123')
      .set('cookie', 'session=s3cret')
      .expect(200);
    expect(given.headers['x-request-id']).toBe('trace-123');
    const made = await org.request('get', '/v1/policies').expect(200);
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const line = env.logs.find((entry) => (entry.req as { id?: string } | undefined)?.id === 'trace-123');
    // Method, url, status, duration and request id; no header of the request or the response.
    expect(line).toEqual({
      level: 30,
      time: expect.any(Number),
      pid: expect.any(Number),
      hostname: expect.any(String),
      name: 'test',
      req: { id: 'trace-123', method: 'GET', url: '/v1/policies?limit=1' },
      res: { statusCode: 200 },
      responseTime: expect.any(Number),
      msg: expect.stringMatching(/^GET \/v1\/policies\?limit=1 200 \d+ ms$/),
    });
    expect(JSON.stringify(env.logs)).not.toContain(org.key);
    expect(JSON.stringify(env.logs)).not.toContain('s3cret');
  });

  it('reads an absent body as {}: accepted where every field is optional, 422 naming each missing field otherwise', async () => {
    // No content-length and no transfer-encoding, as `curl -X POST` sends it (fetch would add content-length: 0).
    const bare = async (path: string) => {
      const socket = connect(Number(new URL(env.baseUrl).port), '127.0.0.1');
      socket.write(`POST ${path} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${org.key}\r\nconnection: close\r\n\r\n`);
      const raw = (await text(socket)).split('\r\n\r\n');
      return { status: Number(raw[0]!.split(' ')[1]), body: JSON.parse(raw[1]!) as Record<string, unknown> };
    };
    expect(await bare('/v1/audit/exports')).toMatchObject({ status: 202, body: { status: 'queued', filters: {} } });
    await org.request('post', '/v1/audit/exports').set('content-length', '0').expect(202);
    expect(await bare('/v1/approvals')).toMatchObject({
      status: 422,
      body: {
        errors: [
          { path: 'action', message: 'action is required and must be a string of 1 to 200 characters' },
          { path: 'payload', message: 'payload is required and must be an object' },
          { path: 'policyKey', message: 'policyKey is required and must be a string of 1 to 200 characters' },
        ],
      },
    });
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
      // The cause is logged with the request it failed, and the request's own line at error level.
      const request = { id: res.headers['x-request-id'], method: 'POST', url: '/v1/approvals' };
      expect(damaged.logs).toContainEqual(
        expect.objectContaining({ level: 50, req: request, msg: 'unhandled error', err: expect.anything() }),
      );
      expect(damaged.logs).toContainEqual(expect.objectContaining({ level: 50, req: request, res: { statusCode: 500 } }));
    } finally {
      await damaged.close();
    }
  });
});

describe('errors once a response has started', () => {
  it('cut the response short and are logged, whatever the error', async () => {
    const { lines, sink } = recordLogLines();
    const logger = createLogger({ LOG_LEVEL: 'info', NODE_ENV: 'test' }, 'test', sink);
    const app = express();
    app.use(logRequests(logger));
    app.get('/started', (_req, res) => {
      res.write('partial');
      throw new NotFoundError('gone midway');
    });
    app.use(errorHandler);
    const server = createServer(app);
    const port = await listenOnLoopback(server);
    try {
      // Whether the client saw the headers before the connection closed depends on timing; never the whole body.
      const received = fetch(`http://127.0.0.1:${port}/started`).then((response) => response.text());
      await expect(received).rejects.toThrow();
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 50, msg: 'unhandled error', err: expect.objectContaining({ message: 'gone midway' }) }),
      );
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/approval_gate',
      REDIS_URL: { kind: 'server', url: 'redis://127.0.0.1:6379' },
      FREE_TIER_MONTHLY_APPROVALS: 100,
      ORPHAN_TIMEOUT_SECONDS: 86400,
    });
  });

  it('treats an empty variable as unset', () => {
    const config = loadConfig({ SMTP_URL: '', ADMIN_USER: '', PORT: '' });
    expect([config.SMTP_URL, config.ADMIN_USER, config.PORT]).toEqual([undefined, undefined, 3000]);
  });

  it('refuses a deadline watch interval past 500 ms, which could miss a one-second timeout', () => {
    expect(loadConfig({ EXPIRY_WATCH_INTERVAL_MS: '500' }).EXPIRY_WATCH_INTERVAL_MS).toBe(500);
    expect(() => loadConfig({ EXPIRY_WATCH_INTERVAL_MS: '501' })).toThrow(/EXPIRY_WATCH_INTERVAL_MS/);
  });

  it('refuses an expiry lead past 450 ms: with the longest watch interval, the watcher would look a whole timeout ahead', () => {
    expect(loadConfig({}).EXPIRY_LEAD_MS).toBe(250);
    expect(loadConfig({ EXPIRY_LEAD_MS: '0' }).EXPIRY_LEAD_MS).toBe(0);
    expect(loadConfig({ EXPIRY_LEAD_MS: '450', EXPIRY_WATCH_INTERVAL_MS: '500' }).EXPIRY_LEAD_MS).toBe(450);
    expect(() => loadConfig({ EXPIRY_LEAD_MS: '451' })).toThrow(/EXPIRY_LEAD_MS/);
    expect(() => loadConfig({ EXPIRY_LEAD_MS: '-1' })).toThrow(/EXPIRY_LEAD_MS/);
  });

  it('refuses an ADMIN_PASSWORD under 12 characters when NODE_ENV is production, naming it', () => {
    const production = { NODE_ENV: 'production', ADMIN_USER: 'ops' };
    expect(() => loadConfig({ ...production, ADMIN_PASSWORD: 'eleven-char' })).toThrow(
      /ADMIN_PASSWORD must be at least 12 characters when NODE_ENV is production/,
    );
    // Named together with any other bad variable, in one start.
    expect(() => loadConfig({ ...production, ADMIN_PASSWORD: 'x', PORT: 'eighty' })).toThrow(/PORT[\s\S]*ADMIN_PASSWORD/);
    expect(loadConfig({ ...production, ADMIN_PASSWORD: 'twelve-chars' }).ADMIN_PASSWORD).toBe('twelve-chars');
    expect(loadConfig({ NODE_ENV: 'development', ADMIN_USER: 'ops', ADMIN_PASSWORD: 'x' }).ADMIN_PASSWORD).toBe('x');
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
