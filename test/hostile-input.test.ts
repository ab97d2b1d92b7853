import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { MAX_JSON_DEPTH } from '../src/lib/json-input.js';
import { isPublicAddress } from '../src/modules/webhooks/webhook-url-guard.js';
import { chainProblem, readChain } from './support/audit-chain.js';
import { createMember } from './support/members.js';
import { createTestEnv, useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

// Production's SSRF rule (private addresses refused), so the guard is what is tested.
useTestEnv((created) => ({ env, org } = created), { WEBHOOK_ALLOW_PRIVATE_URLS: 'false' });

function expectProblem(res: { status: number; headers: Record<string, string>; body: unknown }, status: number) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status });
}

function expectFieldError(res: { status: number; headers: Record<string, string>; body: unknown }, path: string, message: RegExp) {
  expectProblem(res, 422);
  expect((res.body as { errors: { path: string; message: string }[] }).errors).toContainEqual({
    path,
    message: expect.stringMatching(message),
  });
}

/** `{"a":{"a":…1…}}`, objects nested `depth` deep. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let level = 1; level < depth; level++) value = { a: value };
  return value;
}

const NUL = /must not contain the NUL character \(U\+0000\)/;
const SURROGATE = /must not contain a lone UTF-16 surrogate \(U\+D800/;

describe('defect 2: input PostgreSQL cannot store is a 422 naming the field', () => {
  const approval = { action: 'refund', payload: { amount: 5 }, policyKey: 'none' };

  it.each([
    ['action', { ...approval, action: 'pay\u0000' }, 'action', NUL],
    ['agent', { ...approval, agent: 'bot\u0000' }, 'agent', NUL],
    ['policyKey', { ...approval, policyKey: 'p\u0000' }, 'policyKey', NUL],
    ['idempotencyKey', { ...approval, idempotencyKey: 'k\u0000' }, 'idempotencyKey', NUL],
    [
      'a payload value',
      { ...approval, payload: { note: { text: 'a\u0000b' } } },
      'payload.note.text',
      /^payload\.note\.text must not contain the NUL/,
    ],
    [
      'a payload key',
      { ...approval, payload: { ['k\u0000']: 1 } },
      'payload.k\u0000',
      /^payload\.k\u0000 is a key that must not contain the NUL/,
    ],
    ['a context value', { ...approval, context: { why: ['ok', 'x\u0000'] } }, 'context.why.1', NUL],
    ['a lone surrogate in action', { ...approval, action: 'ls\ud800' }, 'action', SURROGATE],
    ['a lone surrogate in a payload value', { ...approval, payload: { s: 'ls\udfff' } }, 'payload.s', /lone UTF-16 surrogate \(U\+DFFF/],
    [
      'a payload nested too deep',
      { ...approval, payload: nested(MAX_JSON_DEPTH + 1) },
      `payload${'.a'.repeat(MAX_JSON_DEPTH)}`,
      /nested too deep/,
    ],
  ])('POST /v1/approvals: %s', async (_name, body, path, message) => {
    expectFieldError(await org.request('post', '/v1/approvals').send(body), path, message);
  });

  it('POST /v1/approvals: a payload nested 5,000 deep', async () => {
    const payload = `${'{"a":'.repeat(4999)}{"leaf":1}${'}'.repeat(4999)}`;
    const res = await org
      .request('post', '/v1/approvals')
      .set('content-type', 'application/json')
      .send(`{"action":"a","policyKey":"p","payload":${payload}}`);
    expectFieldError(res, `payload${'.a'.repeat(MAX_JSON_DEPTH)}`, /at most 64 levels/);
  });

  it('POST /v1/approvals: numbers beyond a double (1e309, which JSON.parse reads as Infinity)', async () => {
    for (const raw of ['{"x":1e309}', '{"x":[-1e400]}']) {
      const res = await org
        .request('post', '/v1/approvals')
        .set('content-type', 'application/json')
        .send(`{"action":"a","policyKey":"p","payload":${raw}}`);
      expectFieldError(res, raw.includes('[') ? 'payload.x.0' : 'payload.x', /must be a finite number/);
    }
  });

  it('accepts a payload nested exactly to the limit, and returns it as sent', async () => {
    const payload = nested(MAX_JSON_DEPTH);
    const created = await org
      .request('post', '/v1/approvals')
      .send({ ...approval, payload })
      .expect(201);
    expect((await org.request('get', `/v1/approvals/${created.body.id}`).expect(200)).body.payload).toEqual(payload);
  });

  it('decisions: feedback and editedPayload', async () => {
    const { body } = await org.request('post', '/v1/approvals').send(approval).expect(201);
    const decide = (decision: object) => org.request('post', `/v1/approvals/${body.id}/decision`).send(decision);
    expectFieldError(await decide({ verdict: 'approved', feedback: 'ok\u0000' }), 'feedback', NUL);
    expectFieldError(await decide({ verdict: 'approved', editedPayload: { ['\ud800']: 1 } }), 'editedPayload.\ud800', SURROGATE);
    expectFieldError(
      await org
        .request('post', `/v1/approvals/${body.id}/decision`)
        .set('content-type', 'application/json')
        .send('{"verdict":"approved","editedPayload":{"amount":1e309}}'),
      'editedPayload.amount',
      /finite number/,
    );
    expect((await org.request('get', `/v1/approvals/${body.id}`).expect(200)).body.status).toBe('pending');
  });

  it('policies: rule text, escalateTo and the key in the path', async () => {
    expectFieldError(
      await org.request('put', '/v1/policies/p').send({ rules: [{ when: 'action == "a\u0000"', outcome: 'allow' }] }),
      'rules.0.when',
      NUL,
    );
    expectFieldError(await org.request('put', '/v1/policies/p').send({ escalateTo: 'm\u0000' }), 'escalateTo', NUL);
    expectFieldError(await org.request('put', '/v1/policies/a%00b').send({}), 'key', NUL);
    expectProblem(await org.request('get', '/v1/policies/a%00b'), 404);
    expectProblem(await org.request('delete', '/v1/policies/a%00b'), 404);
  });

  it('webhooks: the URL', async () => {
    expectFieldError(
      await org.request('post', '/v1/webhooks').send({ url: 'https://example.com/\u0000', events: ['approval.approved'] }),
      'url',
      NUL,
    );
  });

  it('audit: query values and dates PostgreSQL has no year for', async () => {
    expectFieldError(await org.request('get', '/v1/audit?action=a%00'), 'action', NUL);
    expectFieldError(await org.request('get', '/v1/audit?from=0000-01-01'), 'from', /no year 0/);
    expectFieldError(await org.request('get', '/v1/audit?to=0001-01-01T00:30:00%2B01:00'), 'to', /no year 0/);
    expectFieldError(await org.request('post', '/v1/audit/exports').send({ from: '0000-01-01' }), 'from', /no year 0/);
    expectFieldError(await org.request('post', '/v1/audit/exports').send({ agent: 'x\u0000' }), 'agent', NUL);
    await org.request('get', '/v1/audit?from=0001-01-01&to=9999-12-31').expect(200);
  });
});

describe('a body that is not valid UTF-8', () => {
  /** `{"action":"<FF FE>",…}`: bytes no UTF-8 text has, which a lenient decoder turns into U+FFFD. */
  const notUtf8 = Buffer.concat([Buffer.from('{"action":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","payload":{},"policyKey":"p"}')]);

  /** The bytes exactly as given (supertest would serialize a Buffer as JSON). */
  async function sendBytes(method: string, path: string, body: Buffer, headers: Record<string, string>) {
    const res = await fetch(`${env.baseUrl}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body });
    return { status: res.status, headers: Object.fromEntries(res.headers), body: (await res.json()) as { errors?: unknown } };
  }

  it('is 422 naming body, and nothing is stored', async () => {
    const bearer = { authorization: `Bearer ${org.key}` };
    expectFieldError(await sendBytes('POST', '/v1/approvals', notUtf8, bearer), 'body', /UTF-8/);
    // Gzipped, the decompressed bytes are checked.
    expectFieldError(
      await sendBytes('POST', '/v1/approvals', gzipSync(notUtf8), { ...bearer, 'content-encoding': 'gzip' }),
      'body',
      /UTF-8/,
    );
    const listed = await org.request('get', '/v1/approvals').query({ action: '\ufffd\ufffd' }).expect(200);
    expect(listed.body.approvals).toEqual([]);
  });

  it('is 422 naming body on every operation that takes a JSON body', async () => {
    const member = await createMember(env, org, 'admin');
    const signedIn = await fetch(`${env.baseUrl}/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: member.email, password: member.password }),
    });
    const session = {
      cookie: signedIn.headers.getSetCookie()[0]!.split(';')[0]!,
      'x-csrf-token': ((await signedIn.json()) as { csrfToken: string }).csrfToken,
    };
    const document = (await env.http.get('/openapi.json').expect(200)).body as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
    };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, operation]) => operation.requestBody?.content['application/json'])
        .map(([method]) => `${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, randomUUID())}`),
    );
    expect(operations).toContain('POST /v1/approvals');
    expect(operations.length).toBeGreaterThan(10);
    for (const operation of operations) {
      const [method, path] = operation.split(' ') as [string, string];
      // The Bot Framework's endpoint verifies the Bot Connector's token before it reads a byte of the
      // body (test/teams.test.ts tries every forged token): without one it is 401, whatever the body.
      if (path === '/teams/messages') continue;
      let res = await sendBytes(method, path, notUtf8, { authorization: `Bearer ${org.key}` });
      // Operations for a console session only refuse the key: those are sent with a member's session.
      if (res.status === 401) res = await sendBytes(method, path, notUtf8, session);
      expect({ operation, status: res.status, errors: res.body.errors }).toEqual({
        operation,
        status: 422,
        errors: [{ path: 'body', message: expect.stringMatching(/UTF-8/) }],
      });
    }
  });
});

describe('defect 3: 401, 403 and 402 come before anything about the body or the path', () => {
  const LARGE = JSON.stringify({ action: 'a', policyKey: 'p', payload: { blob: 'x'.repeat(1_100_000) } });
  const unreadable: [string, number, (request: ReturnType<TestOrg['request']>) => ReturnType<TestOrg['request']>][] = [
    ['an unknown content-encoding', 422, (r) => r.set('content-encoding', 'foo').set('content-type', 'application/json').send('{}')],
    ['an unknown charset', 422, (r) => r.set('content-type', 'application/json; charset=klingon').send('{}')],
    [
      'a corrupt gzip body',
      422,
      (r) => r.set('content-encoding', 'gzip').set('content-type', 'application/json').send(Buffer.from('not gzip at all')),
    ],
    ['a body over 1 MB', 413, (r) => r.set('content-type', 'application/json').send(LARGE)],
  ];

  it.each(unreadable)('POST /v1/approvals with %s: 401 without a key, 403 without the scope, then %s', async (_name, status, send) => {
    const readOnly = await env.createKey(org.orgId, ['approvals:read']);
    expectProblem(await send(env.http.post('/v1/approvals')), 401);
    expectProblem(await send(env.http.post('/v1/approvals').set('authorization', `Bearer ${readOnly.key}`)), 403);
    expectProblem(await send(org.request('post', '/v1/approvals')), status);
  });

  it('a free plan reading the audit gets 402 before its unreadable body is looked at', async () => {
    const free = await env.createOrg({ plan: 'free' });
    expectProblem(await free.request('post', '/v1/audit/exports').set('content-encoding', 'foo').send('{}'), 402);
    expectProblem(
      await free
        .request('post', '/v1/audit/exports')
        .set('content-encoding', 'gzip')
        .set('content-type', 'application/json')
        .send(gzipSync('{"from":').subarray(0, 12)),
      402,
    );
  });

  it('the free-tier 402 precheck never sends an unstorable idempotency key to the database', async () => {
    const capped = await createTestEnv({ FREE_TIER_MONTHLY_APPROVALS: '0' });
    try {
      const free = await capped.createOrg({ plan: 'free' });
      const res = await free.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p', idempotencyKey: 'k\u0000' });
      expectProblem(res, 402);
    } finally {
      await capped.close();
    }
  });

  it.each([
    ['get', '/v1/approvals/%E0%A4%A', 'approvals:read'],
    ['post', '/v1/approvals/%E0%A4%A/decision', 'approvals:decide'],
    ['get', '/v1/webhooks/%ZZ', 'webhooks:read'],
    ['delete', '/v1/webhooks/%ZZ', 'webhooks:write'],
    ['get', '/v1/audit/exports/%ZZ', 'audit:read'],
    ['get', '/v1/audit/exports/%C0%80/download', 'audit:read'],
  ] as const)('%s %s: 401 without a key, 403 without the scope, 404 with one', async (method, path, scope) => {
    const other = await env.createKey(org.orgId, [scope === 'webhooks:read' ? 'approvals:read' : 'webhooks:read']);
    expectProblem(await env.http[method](path), 401);
    expectProblem(await env.http[method](path).set('authorization', `Bearer ${other.key}`), 403);
    const found = await org.request(method, path).send(method === 'post' ? { verdict: 'approved' } : undefined);
    expectProblem(found, 404);
  });

  it('PUT /v1/policies/%ZZ: 401, then 422 naming the path (a key that cannot be decoded is invalid input)', async () => {
    expectProblem(await env.http.put('/v1/policies/%ZZ').send({}), 401);
    expectFieldError(await org.request('put', '/v1/policies/%ZZ').send({}), 'path', /not valid percent-encoded UTF-8/);
  });
});

describe('defect 4: a payload keeps every key, __proto__ included', () => {
  const RAW = '{"action":"refund","policyKey":"p","payload":{"__proto__":{"amount":5},"x":1}}';

  it('is stored, returned, hashed and audited exactly as sent', async () => {
    const created = await org.request('post', '/v1/approvals').set('content-type', 'application/json').send(RAW).expect(201);
    expect(created.text).toContain('"__proto__":{"amount":5}');
    const read = await org.request('get', `/v1/approvals/${created.body.id}`).expect(200);
    expect(read.text).toContain('"payload":{"x":1,"__proto__":{"amount":5}}');

    const chain = await readChain(env.services.db, org.orgId);
    const event = chain.find((entry) => entry.type === 'approval.created' && entry.data.approvalId === created.body.id)!;
    expect(Object.hasOwn(event.data.payload as object, '__proto__')).toBe(true);
    expect(JSON.stringify(event.data.payload)).toBe('{"__proto__":{"amount":5},"x":1}');
    expect(chainProblem(chain)).toBeNull();
  });

  it('is evaluated by the policy as a key like any other', async () => {
    await org
      .request('put', '/v1/policies/proto')
      .send({ rules: [{ when: 'payload["__proto__"].amount == 5.0', outcome: 'allow' }] })
      .expect(200);
    const res = await org.request('post', '/v1/approvals').set('content-type', 'application/json').send(RAW.replace('"p"', '"proto"'));
    expect(res.status).toBe(200);
  });

  it('survives in an edited payload', async () => {
    const { body } = await org.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' }).expect(201);
    // Another key than the one that asked: nobody approves their own request.
    const decider = await env.createKey(org.orgId, ['approvals:decide']);
    const decided = await env.http
      .post(`/v1/approvals/${body.id}/decision`)
      .set('authorization', `Bearer ${decider.key}`)
      .set('content-type', 'application/json')
      .send('{"verdict":"approved","editedPayload":{"__proto__":{"admin":true}}}')
      .expect(200);
    expect(decided.text).toContain('"payload":{"__proto__":{"admin":true}}');
  });
});

describe('defect 5: the SSRF guard allows only public unicast addresses', () => {
  const refused = [
    'http://[::127.0.0.1]/',
    'http://[::ffff:0:127.0.0.1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[2002:7f00:1::]/',
    'http://[fec0::1]/',
    'http://[2001::1]/',
    'http://[64:ff9b:1::a00:1]/',
    'http://[64:ff9b::10.0.0.1]/',
    'http://[100::1]/',
    'http://0x7f.1/',
    'http://192.0.0.170/',
  ];

  it.each(refused)('refuses %s at registration', async (url) => {
    expectFieldError(await org.request('post', '/v1/webhooks').send({ url, events: ['approval.approved'] }), 'url', /non-public address/);
  });

  it('accepts public addresses, IPv4 and IPv6, and an IPv4-mapped public one', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(address), address).toBe(true);
  });
});

describe('defect 6: small ones', () => {
  it('answers a header block over 16 KB with 431 problem+json', async () => {
    const { port } = new URL(env.baseUrl);
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const request = http.get({ host: '127.0.0.1', port, path: '/healthz', headers: { 'x-filler': 'x'.repeat(17 * 1024) } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
      });
      request.on('error', reject);
    });
    expect(answer.status).toBe(431);
    expect(answer.type).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 431, code: 'headers_too_large', title: 'Request Header Fields Too Large' });
  });

  it('takes wait in decimal digits only, and refuses unknown or repeated parameters', async () => {
    const { body } = await org.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'p' }).expect(201);
    const read = (query: string) => org.request('get', `/v1/approvals/${body.id}?${query}`);
    for (const query of ['wait=1e1', 'wait=0x1e', 'wait=%205', 'wait=', 'wait=1.5', 'wait=1&wait=2']) {
      expectFieldError(await read(query), 'wait', /./);
    }
    expectFieldError(await read('wait[]=1'), 'wait[]', /is not a known field/);
    expectFieldError(await read('wiat=30'), 'wiat', /is not a known field/);
    await read('wait=1').expect(200);
  });

  it('documents every configuration default as the code has it', () => {
    const defaults = loadConfig({});
    const operations = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const start = operations.indexOf('## Configuration');
    const table = operations.slice(start, operations.indexOf('\n## ', start + 1));
    const rows = [...table.matchAll(/^\| `([A-Z_]+)`\s*\| `([^`]+)`/gm)];
    expect(rows.length).toBeGreaterThan(10);
    for (const [, name, documented] of rows) {
      const actual = defaults[name as keyof typeof defaults];
      if (typeof actual === 'number' || (typeof actual === 'string' && !actual.includes('/')))
        expect(String(actual), name).toBe(documented);
    }
    expect(defaults.WEBHOOK_ENDPOINT_CONCURRENCY).toBe(10);
  });
});
