import { randomUUID } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { readChain, type ExportedEvent } from './support/audit-chain.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let chain: ExportedEvent[];

const TRICKY_ACTION = 'refund, "big" one\nsecond line; €ü 日本';
const TRICKY_PAYLOAD = { note: 'a,b "c"\r\nd', emoji: '😀', nested: { 'k,"': ['x\ny', 1.5] } };
const CSV_HEADER = 'seq,createdAt,type,actor,data,prevHash,hash';

beforeAll(async () => {
  env = await createTestEnv();
  org = await env.createOrg();
  worker = await startWorkerRuntime(env.services, ['audit-export']);

  await org
    .request('put', '/v1/policies/p')
    .send({ rules: [{ when: 'payload.n < 10', outcome: 'allow' }] })
    .expect(200);
  const create = (body: Record<string, unknown>) => org.request('post', '/v1/approvals').send({ policyKey: 'p', ...body });
  await create({ action: TRICKY_ACTION, payload: TRICKY_PAYLOAD, agent: 'bot-1' }).expect(201);
  await create({ action: 'deploy', payload: { n: 1 }, agent: 'bot-2' }).expect(200);
  const pending = await create({ action: 'deploy', payload: { n: 50 } }).expect(201);
  await create({ action: 'deploy', payload: { n: 2 }, agent: 'bot-1' }).expect(200);
  await org
    .asReviewer('post', `/v1/approvals/${pending.body.id}/decision`)
    .send({ verdict: 'rejected', feedback: 'no, "never"' })
    .expect(200);
  await create({ action: 'pay', payload: { n: 3 }, agent: 'bot-2' }).expect(200);
  chain = await readChain(env.services.db, org.orgId);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
});

async function page(query: Record<string, string | number | boolean>, client: TestOrg = org) {
  const res = await client.request('get', '/v1/audit').query(query).expect(200);
  return res.body as { events: ExportedEvent[]; verification?: Record<string, unknown> };
}

function parseCsv(text: string): ExportedEvent[] {
  const records = parse(text, { columns: true }) as Record<string, string>[];
  return records.map((record) => ({
    seq: Number(record.seq),
    prevHash: record.prevHash!,
    hash: record.hash!,
    type: record.type!,
    actor: record.actor!,
    data: JSON.parse(record.data!) as Record<string, unknown>,
    createdAt: record.createdAt!,
  }));
}

async function waitForExport(id: string, client: TestOrg = org) {
  for (let i = 0; i < 200; i++) {
    const res = await client.request('get', `/v1/audit/exports/${id}`).expect(200);
    if (res.body.status === 'completed' || res.body.status === 'failed') return res.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`export ${id} did not finish`);
}

describe('GET /v1/audit', () => {
  it('returns the chain in seq order, each event exactly as hashed', async () => {
    const { events, verification } = await page({});
    expect(events).toEqual(chain);
    expect(verification).toBeUndefined();
    expect(Object.keys(events[0]!).sort()).toEqual(['actor', 'createdAt', 'data', 'hash', 'prevHash', 'seq', 'type']);
    expect(chain.map((event) => event.seq)).toEqual(chain.map((_, index) => index + 1));
  });

  it('applies each filter alone and all of them together', async () => {
    const mid = chain[Math.floor(chain.length / 2)]!.createdAt;
    const cases: [Record<string, string>, (event: ExportedEvent) => boolean][] = [
      [{ type: 'approval.created' }, (e) => e.type === 'approval.created'],
      [{ action: 'deploy' }, (e) => e.data.action === 'deploy'],
      [{ action: TRICKY_ACTION }, (e) => e.data.action === TRICKY_ACTION],
      [{ agent: 'bot-1' }, (e) => e.data.agent === 'bot-1'],
      [{ from: mid }, (e) => e.createdAt >= mid],
      [{ to: mid }, (e) => e.createdAt <= mid],
      [
        { type: 'approval.approved', action: 'deploy', agent: 'bot-1', from: chain[0]!.createdAt, to: chain.at(-1)!.createdAt },
        (e) => e.type === 'approval.approved' && e.data.action === 'deploy' && e.data.agent === 'bot-1',
      ],
    ];
    for (const [query, predicate] of cases) {
      const expected = chain.filter(predicate);
      expect(expected.length, JSON.stringify(query)).toBeGreaterThan(0);
      expect((await page(query)).events, JSON.stringify(query)).toEqual(expected);
    }
    expect((await page({ type: 'webhook.deleted' })).events).toEqual([]);
    expect((await page({ from: '2100-01-01' })).events).toEqual([]);
    expect((await page({ agent: 'bot-1', type: 'policy.updated' })).events).toEqual([]);
  });

  it('pages with after and limit to the end, then answers empty pages', async () => {
    const seen: ExportedEvent[] = [];
    let after = 0;
    for (;;) {
      const { events } = await page({ after, limit: 3 });
      seen.push(...events);
      if (events.length < 3) break;
      after = events.at(-1)!.seq;
    }
    expect(seen).toEqual(chain);
    const head = chain.length;
    expect((await page({ after: head - 1, limit: 1000 })).events).toEqual([chain.at(-1)]);
    expect((await page({ after: head })).events).toEqual([]);
    expect((await page({ after: head + 1_000_000 })).events).toEqual([]);
    expect((await page({ after: 0, limit: 1 })).events).toEqual([chain[0]]);
    const filtered = chain.filter((e) => e.type === 'approval.created');
    expect((await page({ type: 'approval.created', after: filtered[0]!.seq, limit: 1 })).events).toEqual([filtered[1]]);
  });

  it('verifies the whole chain whatever the filters and paging', async () => {
    // No AUDIT_SIGNING_KEY here: no checkpoints to check (see audit-checkpoints.test.ts).
    const expected = { intact: true, count: chain.length, headHash: chain.at(-1)!.hash, brokenAtSeq: null, checkpoints: 0 };
    expect((await page({ verify: true })).verification).toEqual(expected);
    const filtered = await page({ verify: true, type: 'policy.updated', limit: 1, after: 0 });
    expect(filtered.events).toHaveLength(1);
    expect(filtered.verification).toEqual(expected);
    expect((await page({ verify: false })).verification).toBeUndefined();
    const empty = await env.createOrg();
    expect((await page({ verify: true }, empty)).verification).toEqual({
      intact: true,
      count: 0,
      headHash: null,
      brokenAtSeq: null,
      checkpoints: 0,
    });
  });

  it('serves the same events as CSV, with the contract header and RFC 4180 quoting', async () => {
    const queries: Record<string, string | number>[] = [{}, { agent: 'bot-1' }, { after: 2, limit: 3 }, { from: '2100-01-01' }];
    for (const query of queries) {
      const res = await org
        .request('get', '/v1/audit')
        .query({ ...query, format: 'csv' })
        .expect(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.text.split('\n')[0]).toBe(CSV_HEADER);
      expect(parseCsv(res.text)).toEqual((await page(query)).events);
    }
  });

  it('round-trips commas, quotes, newlines and non-ASCII in action and payload through a CSV parser', async () => {
    const res = await org.request('get', '/v1/audit').query({ action: TRICKY_ACTION, format: 'csv' }).expect(200);
    const [created] = parseCsv(res.text);
    expect(created!.data).toMatchObject({ action: TRICKY_ACTION, payload: TRICKY_PAYLOAD, agent: 'bot-1' });
    const raw = (parse(res.text, { columns: true }) as Record<string, string>[])[0]!;
    expect(raw.data).toBe(JSON.stringify(JSON.parse(raw.data!))); // compact JSON, as stored
    expect(res.text).toContain('""action"":""refund, \\""big\\"" one\\nsecond line; €ü 日本""');
  });

  it('answers 401, then 403, then 402, then 422', async () => {
    const noKey = await env.http.get('/v1/audit');
    expect(noKey.status).toBe(401);
    expect(noKey.headers['www-authenticate']).toBe('Bearer');
    const free = await env.createOrg({ plan: 'free' });
    const freeRes = await free.request('get', '/v1/audit').query({ limit: 0 });
    expect(freeRes.status).toBe(402);
    expect(freeRes.body.code).toBe('payment_required');
    expect(freeRes.headers['content-type']).toMatch(/^application\/problem\+json/);
    const unscoped = await env.createOrg({ plan: 'free', scopes: ['approvals:read'] });
    expect((await unscoped.request('get', '/v1/audit').query({ limit: 0 })).status).toBe(403);
    const { key } = await env.createKey(org.orgId, ['approvals:read', 'approvals:write']);
    const forbidden = await env.http.get('/v1/audit').set('authorization', `Bearer ${key}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe('forbidden');
    const enterprise = await env.createOrg({ plan: 'enterprise' });
    await enterprise.request('get', '/v1/audit').expect(200);
  });

  it('answers 422 naming the field for every invalid query value', async () => {
    const invalid: [string, Record<string, string>][] = [
      ['from', { from: 'yesterday' }],
      ['from', { from: '2026-01-01T10:00:00' }],
      ['to', { to: '2026-13-01' }],
      ['to', { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }],
      ['type', { type: 'approval.unknown' }],
      ['action', { action: '' }],
      ['action', { action: 'x'.repeat(201) }],
      ['agent', { agent: '' }],
      ['after', { after: '-1' }],
      ['after', { after: '1.5' }],
      ['after', { after: 'abc' }],
      ['after', { after: '1e3' }],
      ['limit', { limit: '0' }],
      ['limit', { limit: '1001' }],
      ['limit', { limit: 'ten' }],
      ['format', { format: 'xml' }],
      ['verify', { verify: 'yes' }],
      ['verify', { verify: 'true', format: 'csv' }],
      ['agnet', { agnet: 'bot-1' }],
    ];
    for (const [field, query] of invalid) {
      const res = await org.request('get', '/v1/audit').query(query);
      expect(res.status, JSON.stringify(query)).toBe(422);
      expect(res.body.code).toBe('validation_failed');
      expect(
        res.body.errors.map((error: { path: string }) => error.path),
        JSON.stringify(query),
      ).toEqual([field]);
    }
    const repeated = await org.request('get', '/v1/audit?type=approval.created&type=approval.approved');
    expect(repeated.status).toBe(422);
    expect(repeated.body.errors[0].path).toBe('type');
    await org.request('get', '/v1/audit').query({ verify: 'false', format: 'csv' }).expect(200);
    await org.request('get', '/v1/audit').query({ from: '2026-01-01', to: '2026-01-01T05:00:00+02:00' }).expect(200);
  });
});

describe('bulk exports', () => {
  it('exports a selection to a CSV identical to the same GET /v1/audit page', async () => {
    const filters = { agent: 'bot-1', from: chain[0]!.createdAt };
    const created = await org.request('post', '/v1/audit/exports').send(filters).expect(202);
    expect(created.body).toMatchObject({ status: 'queued', rowCount: 0, completedAt: null, downloadPath: null, filters });
    const done = await waitForExport(created.body.id);
    const expectedRows = chain.filter((e) => e.data.agent === 'bot-1').length;
    expect(done).toMatchObject({ id: created.body.id, status: 'completed', rowCount: expectedRows });
    expect(done.downloadPath).toBe(`/v1/audit/exports/${created.body.id}/download`);
    expect(Date.parse(done.completedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt));

    const file = await org.request('get', done.downloadPath).expect(200);
    expect(file.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(file.headers['content-disposition']).toBe(`attachment; filename="audit-export-${created.body.id}.csv"`);
    const pageCsv = await org
      .request('get', '/v1/audit')
      .query({ ...filters, format: 'csv', limit: 1000 })
      .expect(200);
    expect(file.text).toBe(pageCsv.text);
  });

  it('exports the whole chain with no filters', async () => {
    const created = await org.request('post', '/v1/audit/exports').send({}).expect(202);
    const done = await waitForExport(created.body.id);
    expect(done.rowCount).toBe(chain.length);
    const file = await org.request('get', done.downloadPath).expect(200);
    expect(parseCsv(file.text)).toEqual(chain);
  });

  it('keeps exports to their organization and refuses to download an unfinished one', async () => {
    const created = await org.request('post', '/v1/audit/exports').send({ type: 'approval.created' }).expect(202);
    await waitForExport(created.body.id);
    const other = await env.createOrg();
    for (const suffix of ['', '/download']) {
      const res = await other.request('get', `/v1/audit/exports/${created.body.id}${suffix}`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
      await other.request('get', `/v1/audit/exports/${randomUUID()}${suffix}`).expect(404);
      await org.request('get', `/v1/audit/exports/not-a-uuid${suffix}`).expect(404);
    }
    const queued = await env.services.db.auditExport.create({ data: { orgId: org.orgId, filters: {} } });
    const status = await org.request('get', `/v1/audit/exports/${queued.id}`).expect(200);
    expect(status.body).toMatchObject({ status: 'queued', downloadPath: null });
    const early = await org.request('get', `/v1/audit/exports/${queued.id}/download`);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('conflict');
  });

  it('validates the selection and applies the same access rules', async () => {
    const bad = await org.request('post', '/v1/audit/exports').send({ type: 'nope', limit: 5 });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['limit', 'type']);
    const malformed = await org.request('post', '/v1/audit/exports').set('content-type', 'application/json').send('{');
    expect(malformed.status).toBe(422);
    const free = await env.createOrg({ plan: 'free' });
    expect((await free.request('post', '/v1/audit/exports').send({ type: 'nope' })).status).toBe(402);
    const { key } = await env.createKey(org.orgId, ['approvals:read']);
    expect((await env.http.post('/v1/audit/exports').set('authorization', `Bearer ${key}`).send({})).status).toBe(403);
    expect((await env.http.post('/v1/audit/exports').send({})).status).toBe(401);
  });

  it('documents the audit routes in the OpenAPI document', async () => {
    const { body } = await env.http.get('/openapi.json').expect(200);
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining(['/v1/audit', '/v1/audit/exports', '/v1/audit/exports/{id}', '/v1/audit/exports/{id}/download']),
    );
    const parameters = body.paths['/v1/audit'].get.parameters.map((parameter: { name: string }) => parameter.name);
    expect(parameters.sort()).toEqual(['action', 'after', 'agent', 'checkpoints', 'format', 'from', 'limit', 'to', 'type', 'verify']);
  });
});
