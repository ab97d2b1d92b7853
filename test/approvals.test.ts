import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

const REVIEW_POLICY = {
  rules: [{ when: "action == 'refund' && payload.amount <= 100", outcome: 'allow' }],
  defaultOutcome: 'review',
  timeoutSeconds: 600,
};

beforeAll(async () => {
  env = await createTestEnv();
  org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send(REVIEW_POLICY).expect(200);
});
afterAll(() => env.close());

function create(body: Record<string, unknown>, as: TestOrg = org) {
  return as.request('post', '/v1/approvals').send(body);
}

describe('POST /v1/approvals', () => {
  it('auto-approves with 200 when the policy allows', async () => {
    const res = await create({ action: 'refund', payload: { amount: 99.5 }, policyKey: 'refunds' }).expect(200);
    expect(res.body).toMatchObject({ status: 'approved', action: 'refund', payload: { amount: 99.5 }, expiresAt: null, feedback: null });
    expect(res.body).not.toHaveProperty('context');
    // The spec's fields and the extensions of contract C3 (amended), C16 and C18, nothing else.
    expect(Object.keys(res.body).sort()).toEqual([
      'action',
      'agent',
      'createdAt',
      'decidedAt',
      'decidedBy',
      'expiresAt',
      'feedback',
      'id',
      'onBehalfOf',
      'payload',
      'payloadHash',
      'policyKey',
      'policyVersion',
      'quorum',
      'receipt',
      'revision',
      'revisions',
      'stage',
      'status',
      'votes',
    ]);
    expect(res.body).toMatchObject({
      agent: null,
      policyKey: 'refunds',
      decidedBy: { type: 'policy', id: 'refunds' },
      quorum: 1,
      stage: null,
      votes: [],
    });
    expect(res.body.decidedAt).toBe(res.body.createdAt);
    // The answer is made from what was written, not read back: it is what a read gives.
    expect((await org.request('get', `/v1/approvals/${res.body.id}`).expect(200)).body).toEqual(res.body);
  });

  it('compares a JSON number with an integer literal at the boundary', async () => {
    await create({ action: 'refund', payload: { amount: 100 }, policyKey: 'refunds' }).expect(200);
    const res = await create({ action: 'refund', payload: { amount: 100.01 }, policyKey: 'refunds' }).expect(201);
    expect(res.body.status).toBe('pending');
  });

  it('leaves a request pending with 201 and an expiry from the policy timeout', async () => {
    const before = Date.now();
    const res = await create({ action: 'refund', payload: { amount: 5000 }, policyKey: 'refunds', context: { why: 'big' } }).expect(201);
    expect(res.body).toMatchObject({ status: 'pending', context: { why: 'big' }, feedback: null });
    const expiresIn = Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt);
    expect(expiresIn).toBe(600_000);
    expect(Date.parse(res.body.createdAt)).toBeGreaterThanOrEqual(before - 5);
  });

  it('creates an orphan pending with the orphan timeout when no policy matches the key', async () => {
    const res = await create({ action: 'deploy', payload: {}, policyKey: 'no-such-policy' }).expect(201);
    expect(res.body.status).toBe('pending');
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)).toBe(env.config.ORPHAN_TIMEOUT_SECONDS * 1000);
    const outbox = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, eventType: 'approval.orphaned' } });
    const body = outbox.map((row) => row.body as { data: { approvalId: string } }).find((b) => b.data.approvalId === res.body.id);
    expect(body).toMatchObject({ type: 'approval.orphaned', data: { status: 'pending', verdict: null, action: 'deploy', feedback: null } });
  });

  it('returns the existing record with 201 on an idempotency replay, even with a different body', async () => {
    const first = await create({ action: 'refund', payload: { amount: 1 }, policyKey: 'refunds', idempotencyKey: 'idem-1' }).expect(200);
    const replay = await create({ action: 'other', payload: { amount: 7 }, policyKey: 'x', idempotencyKey: 'idem-1' }).expect(201);
    expect(replay.body).toEqual(first.body);
  });

  it('scopes idempotency keys to the organization', async () => {
    const other = await env.createOrg();
    const a = await create({ action: 'a', payload: {}, policyKey: 'p', idempotencyKey: 'shared' }).expect(201);
    const b = await create({ action: 'a', payload: {}, policyKey: 'p', idempotencyKey: 'shared' }, other).expect(201);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it.each([
    ['missing action', { payload: {}, policyKey: 'p' }, 'action'],
    ['empty action', { action: '', payload: {}, policyKey: 'p' }, 'action'],
    ['action over 200 chars', { action: 'a'.repeat(201), payload: {}, policyKey: 'p' }, 'action'],
    ['payload not an object', { action: 'a', payload: [1], policyKey: 'p' }, 'payload'],
    ['payload a string', { action: 'a', payload: 'x', policyKey: 'p' }, 'payload'],
    ['missing payload', { action: 'a', policyKey: 'p' }, 'payload'],
    ['policyKey over 200 chars', { action: 'a', payload: {}, policyKey: 'p'.repeat(201) }, 'policyKey'],
    ['agent empty', { action: 'a', payload: {}, policyKey: 'p', agent: '' }, 'agent'],
    ['agent wrong type', { action: 'a', payload: {}, policyKey: 'p', agent: 5 }, 'agent'],
    ['context not an object', { action: 'a', payload: {}, policyKey: 'p', context: 'x' }, 'context'],
    ['idempotencyKey wrong type', { action: 'a', payload: {}, policyKey: 'p', idempotencyKey: 1 }, 'idempotencyKey'],
  ])('answers 422 naming the field for %s', async (_name, body, path) => {
    const res = await create(body).expect(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({
      status: 422,
      code: 'validation_failed',
      title: expect.any(String),
      type: expect.any(String),
      detail: expect.any(String),
    });
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('names every failing field at once', async () => {
    const res = await create({ action: 1, payload: null }).expect(422);
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['action', 'payload', 'policyKey']);
  });

  it('answers 422 for a malformed JSON body and for a body that is not JSON at all', async () => {
    const malformed = await org.request('post', '/v1/approvals').set('content-type', 'application/json').send('{"action": ');
    expect(malformed.status).toBe(422);
    expect(malformed.body.errors[0].path).toBe('body');
    const text = await org.request('post', '/v1/approvals').set('content-type', 'text/plain').send('hello');
    expect(text.status).toBe(422);
    const empty = await org.request('post', '/v1/approvals');
    expect(empty.status).toBe(422);
  });

  it('answers 413 problem+json for a body over 1 MB', async () => {
    const res = await create({ action: 'a', payload: { blob: 'x'.repeat(1_100_000) }, policyKey: 'p' });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
  });
});

describe('GET /v1/approvals/:id', () => {
  it('reads an approval of the organization', async () => {
    const created = await create({ action: 'refund', payload: { amount: 5000 }, policyKey: 'refunds' }).expect(201);
    const res = await org.request('get', `/v1/approvals/${created.body.id}`).expect(200);
    expect(res.body).toEqual(created.body);
  });

  it("answers 404 for an unknown id, a non-UUID id, and another organization's id, with the same body", async () => {
    const other = await env.createOrg();
    const theirs = await create({ action: 'x', payload: {}, policyKey: 'p' }, other).expect(201);
    const unknown = await org.request('get', '/v1/approvals/7b0e7a4e-54a4-4c1a-9d0e-2f4b8a9c1d11').expect(404);
    const crossOrg = await org.request('get', `/v1/approvals/${theirs.body.id}`).expect(404);
    const notUuid = await org.request('get', '/v1/approvals/not-a-uuid').expect(404);
    for (const res of [unknown, crossOrg, notUuid]) {
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('not_found');
    }
    expect({ ...crossOrg.body, detail: undefined }).toEqual({ ...unknown.body, detail: undefined });
  });

  it.each(['0', '31', '1.5', 'abc', '-1', ''])('answers 422 for wait=%s', async (wait) => {
    const created = await create({ action: 'x', payload: {}, policyKey: 'p' }).expect(201);
    const res = await org.request('get', `/v1/approvals/${created.body.id}?wait=${wait}`).expect(422);
    expect(res.body.errors[0].path).toBe('wait');
  });
});

describe('POST /v1/approvals/:id/decision', () => {
  it('approves with feedback and an edited payload', async () => {
    const created = await create({ action: 'refund', payload: { amount: 5000 }, policyKey: 'refunds' }).expect(201);
    const res = await org
      .asReviewer('post', `/v1/approvals/${created.body.id}/decision`)
      .send({ verdict: 'approved', feedback: 'ok, but less', editedPayload: { amount: 4000 } })
      .expect(200);
    expect(res.body).toMatchObject({
      id: created.body.id,
      status: 'approved',
      payload: { amount: 4000 },
      feedback: 'ok, but less',
      expiresAt: null,
    });
    const read = await org.request('get', `/v1/approvals/${created.body.id}`).expect(200);
    expect(read.body).toEqual(res.body);
    const outbox = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, eventType: 'approval.approved' } });
    const body = outbox.map((row) => row.body as { data: { approvalId: string } }).find((b) => b.data.approvalId === created.body.id);
    expect(body).toMatchObject({ data: { status: 'approved', verdict: 'approved', feedback: 'ok, but less', payload: { amount: 4000 } } });
  });

  it('rejects, then answers 409 to any further decision', async () => {
    const created = await create({ action: 'refund', payload: { amount: 5000 }, policyKey: 'refunds' }).expect(201);
    const rejected = await org
      .asReviewer('post', `/v1/approvals/${created.body.id}/decision`)
      .send({ verdict: 'rejected', feedback: 'no' })
      .expect(200);
    expect(rejected.body).toMatchObject({ status: 'rejected', feedback: 'no', payload: { amount: 5000 } });
    expect((await org.request('get', `/v1/approvals/${created.body.id}`).expect(200)).body).toEqual(rejected.body);
    const again = await org.asReviewer('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'approved' }).expect(409);
    expect(again.body.code).toBe('conflict');
  });

  it('answers 409 for an auto-approved record', async () => {
    const created = await create({ action: 'refund', payload: { amount: 1 }, policyKey: 'refunds' }).expect(200);
    await org.asReviewer('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'rejected' }).expect(409);
  });

  it('answers 409 once the deadline has passed, even before the expiry is processed', async () => {
    await org.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
    const created = await create({ action: 'x', payload: {}, policyKey: 'short' }).expect(201);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await org.asReviewer('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'approved' }).expect(409);
  });

  it('answers 404 for unknown, non-UUID and cross-organization ids', async () => {
    const other = await env.createOrg();
    const theirs = await create({ action: 'x', payload: {}, policyKey: 'p' }, other).expect(201);
    await org.asReviewer('post', `/v1/approvals/${theirs.body.id}/decision`).send({ verdict: 'approved' }).expect(404);
    await org.asReviewer('post', '/v1/approvals/nope/decision').send({ verdict: 'approved' }).expect(404);
    await org.asReviewer('post', '/v1/approvals/7b0e7a4e-54a4-4c1a-9d0e-2f4b8a9c1d11/decision').send({ verdict: 'approved' }).expect(404);
    const still = await other.request('get', `/v1/approvals/${theirs.body.id}`).expect(200);
    expect(still.body.status).toBe('pending');
  });

  it.each([
    ['missing verdict', {}, 'verdict'],
    ['unknown verdict', { verdict: 'maybe' }, 'verdict'],
    ['feedback over 5000 chars', { verdict: 'approved', feedback: 'f'.repeat(5001) }, 'feedback'],
    ['editedPayload not an object', { verdict: 'approved', editedPayload: 3 }, 'editedPayload'],
    ['editedPayload with a rejection', { verdict: 'rejected', editedPayload: {} }, 'editedPayload'],
  ])('answers 422 for %s', async (_name, body, path) => {
    const created = await create({ action: 'x', payload: {}, policyKey: 'p' }).expect(201);
    const res = await org.asReviewer('post', `/v1/approvals/${created.body.id}/decision`).send(body).expect(422);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('accepts feedback of exactly 5000 chars', async () => {
    const created = await create({ action: 'x', payload: {}, policyKey: 'p' }).expect(201);
    await org
      .asReviewer('post', `/v1/approvals/${created.body.id}/decision`)
      .send({ verdict: 'rejected', feedback: 'f'.repeat(5000) })
      .expect(200);
  });
});
