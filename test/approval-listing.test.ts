import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { jcs } from './support/audit-chain.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

interface View {
  id: string;
  status: string;
  action: string;
  agent: string | null;
  policyKey: string;
  createdAt: string;
  payload: Record<string, unknown>;
  payloadHash: string;
  decidedBy: unknown;
  decidedAt: string | null;
}

/** Creates `n` approvals one after another, so their createdAt order is their creation order. */
async function createMany(n: number, as: TestOrg, fields: (i: number) => Record<string, unknown>): Promise<View[]> {
  const views: View[] = [];
  for (let i = 0; i < n; i++) {
    views.push((await as.request('post', '/v1/approvals').send({ payload: { i }, ...fields(i) })).body as View);
  }
  return views;
}

function list(query: Record<string, string | number>, as: TestOrg = org) {
  return as.request('get', '/v1/approvals').query(query);
}

const ids = (views: View[]) => views.map((view) => view.id);
const newestFirst = (views: View[]) => [...views].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));

let seeded: View[];

beforeAll(async () => {
  await org.request('put', '/v1/policies/allow').send({ defaultOutcome: 'allow' }).expect(200);
  await org.request('put', '/v1/policies/review').send({ defaultOutcome: 'review' }).expect(200);
  seeded = await createMany(24, org, (i) => ({
    action: i % 2 ? 'refund' : 'deploy',
    agent: i % 3 ? `agent-${i % 3}` : null,
    policyKey: i % 4 === 0 ? 'allow' : 'review',
  }));
  // Settle a few so every status filter has something to find.
  const pending = seeded.filter((view) => view.status === 'pending');
  await org.asReviewer('post', `/v1/approvals/${pending[0]!.id}/decision`).send({ verdict: 'rejected', feedback: 'no' }).expect(200);
  await org.asReviewer('post', `/v1/approvals/${pending[1]!.id}/decision`).send({ verdict: 'approved' }).expect(200);
  seeded = await Promise.all(seeded.map(async (view) => (await org.request('get', `/v1/approvals/${view.id}`).expect(200)).body as View));
});

describe('GET /v1/approvals', () => {
  it('lists newest first, 50 by default, with a null cursor on the last page', async () => {
    const res = await list({}).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['approvals', 'nextCursor']);
    expect(ids(res.body.approvals)).toEqual(ids(newestFirst(seeded)));
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.approvals[0]).toEqual(newestFirst(seeded)[0]);
  });

  it.each([
    ['status', { status: 'pending' }, (v: View) => v.status === 'pending'],
    ['several statuses', { status: 'approved,rejected' }, (v: View) => v.status === 'approved' || v.status === 'rejected'],
    ['action', { action: 'refund' }, (v: View) => v.action === 'refund'],
    ['agent', { agent: 'agent-1' }, (v: View) => v.agent === 'agent-1'],
    ['policyKey', { policyKey: 'allow' }, (v: View) => v.policyKey === 'allow'],
    [
      'action, agent and status together',
      { action: 'deploy', agent: 'agent-2', status: 'pending' },
      (v: View) => v.action === 'deploy' && v.agent === 'agent-2' && v.status === 'pending',
    ],
  ] as const)('filters by %s', async (_name, query, keep) => {
    const expected = newestFirst(seeded.filter(keep));
    expect(expected.length).toBeGreaterThan(0);
    const res = await list(query).expect(200);
    expect(ids(res.body.approvals)).toEqual(ids(expected));
  });

  it('filters by creation time, both bounds inclusive', async () => {
    const ordered = [...seeded].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const from = ordered[5]!.createdAt;
    const to = ordered[10]!.createdAt;
    const res = await list({ from, to }).expect(200);
    const expected = newestFirst(seeded.filter((view) => view.createdAt >= from && view.createdAt <= to));
    expect(ids(res.body.approvals)).toEqual(ids(expected));
    expect(res.body.approvals.length).toBeGreaterThanOrEqual(6);
  });

  it('walks every row exactly once by cursor while new approvals arrive between pages', async () => {
    const before = newestFirst(seeded);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string | number> = cursor ? { limit: 5, cursor } : { limit: 5 };
      const res = await list(query).expect(200);
      expect(res.body.approvals.length).toBeLessThanOrEqual(5);
      seen.push(...ids(res.body.approvals));
      cursor = res.body.nextCursor;
      // Newer than every page still to come: keyset paging must neither show nor shift them.
      await createMany(2, org, () => ({ action: 'late', policyKey: 'review' }));
    } while (cursor);
    expect(seen).toEqual(ids(before));
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('keeps limit within 1-200 and refuses unknown parameters, bad values and foreign cursors', async () => {
    expect((await list({ limit: 1 }).expect(200)).body.approvals).toHaveLength(1);
    await list({ limit: 200 }).expect(200);
    const refused: Record<string, string | number>[] = [
      { limit: 0 },
      { limit: 201 },
      { limit: '1e2' },
      { status: 'done' },
      { status: 'pending,' },
      { from: 'yesterday' },
      { from: '2026-02-01', to: '2026-01-01' },
      { cursor: 'not-a-cursor' },
      { include: 'votes' },
      { agnet: 'x' },
    ];
    for (const query of refused) {
      const res = await list(query).expect(422);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body.errors[0].path, JSON.stringify(query)).toBe(Object.keys(query)[Object.keys(query).length - 1]);
    }
  });

  it('with include=createdByKey names the API key that created each approval (its name as it is now), and only then', async () => {
    const service = await env.createKey(org.orgId, ['approvals:write', 'approvals:read', 'keys:write']);
    const named = (
      await env.http
        .post('/v1/keys')
        .set('authorization', `Bearer ${service.key}`)
        .send({ scopes: ['approvals:write'], name: 'billing agent' })
        .expect(201)
    ).body as { key: { id: string }; secret: string };
    const create = (key: string, action: string) =>
      env.http.post('/v1/approvals').set('authorization', `Bearer ${key}`).send({ action, payload: {}, policyKey: 'review' }).expect(201);
    const byNamed = (await create(named.secret, 'by-named-key')).body as View;
    const byUnnamed = (await create(service.key, 'by-unnamed-key')).body as View;

    const listed = (await list({ action: 'by-named-key', include: 'createdByKey' }).expect(200)).body.approvals;
    expect(listed).toEqual([{ ...byNamed, createdByKey: { id: named.key.id, name: 'billing agent' } }]);
    const unnamed = (await list({ action: 'by-unnamed-key', include: 'createdByKey' }).expect(200)).body.approvals;
    expect(unnamed[0]).toMatchObject({ id: byUnnamed.id, createdByKey: { id: service.id, name: null } });
    // Without it, the record is as every other read shows it.
    expect((await list({ action: 'by-named-key' }).expect(200)).body.approvals).toEqual([byNamed]);
    expect(byNamed).not.toHaveProperty('createdByKey');
  });

  it('shows another organization nothing of this one, and needs approvals:read', async () => {
    const other = await env.createOrg();
    expect((await list({}, other).expect(200)).body).toEqual({ approvals: [], nextCursor: null });
    const writer = await env.createKey(org.orgId, ['approvals:write']);
    const res = await env.http.get('/v1/approvals').set('authorization', `Bearer ${writer.key}`).expect(403);
    expect(res.body.code).toBe('forbidden');
    await env.http.get('/v1/approvals').expect(401);
  });
});

describe('the approval record (contract C3 amended)', () => {
  it('carries the hash of its payload, recomputed here from RFC 8785 bytes', async () => {
    const payload = { b: [1, 2.5, 'ü'], a: { z: null, y: true }, amount: 1e21 };
    const res = await org.request('post', '/v1/approvals').send({ action: 'x', payload, policyKey: 'review' }).expect(201);
    expect(res.body.payloadHash).toBe(createHash('sha256').update(jcs(payload)).digest('hex'));
    expect(res.body).toMatchObject({ decidedBy: null, decidedAt: null, quorum: 1, votes: [], onBehalfOf: null, agent: null });

    const edited = { a: 1 };
    const approved = await org
      .asReviewer('post', `/v1/approvals/${res.body.id}/decision`)
      .send({ verdict: 'approved', editedPayload: edited })
      .expect(200);
    expect(approved.body.payloadHash).toBe(createHash('sha256').update(jcs(edited)).digest('hex'));
  });

  it('names who decided: the API key, or the policy for an auto-approval', async () => {
    const decided = seeded.find((view) => view.status === 'rejected')!;
    expect(decided.decidedBy).toEqual({ type: 'api_key', id: org.reviewerKeyId });
    expect(Date.parse(decided.decidedAt!)).toBeGreaterThanOrEqual(Date.parse(decided.createdAt));
    const auto = seeded.find((view) => view.status === 'approved' && view.policyKey === 'allow')!;
    expect(auto.decidedBy).toEqual({ type: 'policy', id: 'allow' });
    expect(auto.decidedAt).toBe(auto.createdAt);
  });
});
