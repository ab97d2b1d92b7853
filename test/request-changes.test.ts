import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { chainProblem, readChain } from './support/audit-chain.js';
import { eventually } from './support/eventually.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let receiver: Receiver;

interface Revision {
  revision: number;
  payloadHash: string;
  note: string | null;
  feedback: string | null;
  requestedBy: { type: string; id: string } | null;
  at: string;
}

interface View {
  id: string;
  status: string;
  payload: Record<string, unknown>;
  context?: Record<string, unknown>;
  expiresAt: string | null;
  feedback: string | null;
  decidedBy: { type: string; id: string } | null;
  decidedAt: string | null;
  payloadHash: string;
  votes: { by: { id: string }; verdict: string }[];
  revision: number;
  revisions: Revision[];
  suggestedPayload?: Record<string, unknown> | null;
}

const REVIEW = { rules: [{ when: 'payload.amount <= 100', outcome: 'allow' }], defaultOutcome: 'review', timeoutSeconds: 600 };

beforeAll(async () => {
  env = await createTestEnv({ WEBHOOK_BACKOFF_SCALE: '0.001', EXPIRY_SWEEP_INTERVAL_MS: '500' });
  worker = await startWorkerRuntime(env.services, ['outbox-relay', 'approval-expiry', 'webhook-delivery', 'maintenance']);
  receiver = await startReceiver();
  org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send(REVIEW).expect(200);
  await org.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
});
afterAll(async () => {
  await worker.stop();
  await receiver.close();
  await env.close();
});

async function create(payload: Record<string, unknown> = { amount: 500 }, policyKey = 'refunds', as: TestOrg = org): Promise<View> {
  return (await as.request('post', '/v1/approvals').send({ action: 'refund', payload, policyKey, agent: 'billing-bot' }).expect(201))
    .body as View;
}

const decide = (id: string, body: Record<string, unknown>, as: TestOrg = org) =>
  as.asReviewer('post', `/v1/approvals/${id}/decision`).send(body);

const requestChanges = async (id: string, feedback = 'Refund half of it.', extra: Record<string, unknown> = {}) =>
  (await decide(id, { verdict: 'changes_requested', feedback, ...extra }).expect(200)).body as View;

const revise = (id: string, body: Record<string, unknown>, as: TestOrg = org) =>
  as.request('post', `/v1/approvals/${id}/revisions`).send(body);

const read = async (id: string) => (await org.request('get', `/v1/approvals/${id}`).expect(200)).body as View;

describe('request changes, revise, approve', () => {
  it('runs the whole loop through the API, the long-poll and the webhooks seeing each step in order, the audit chain intact', async () => {
    const path = '/loop';
    await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url(path), events: ['approval.changes_requested', 'approval.revised', 'approval.approved'] })
      .expect(201);
    const approval = await create({ amount: 500, currency: 'EUR' });
    expect(approval).toMatchObject({ status: 'pending', revision: 1 });
    expect(approval.revisions).toEqual([
      { revision: 1, payloadHash: approval.payloadHash, note: null, feedback: null, requestedBy: null, at: expect.any(String) },
    ]);

    // The agent waits; a reviewer asks for changes; the wait answers with them.
    const firstWait = org.request('get', `/v1/approvals/${approval.id}?wait=20`);
    const waiting = firstWait.then((res) => res);
    await eventually(() => env.services.settlements.waiting === 1);
    const suggested = { amount: 250, currency: 'EUR' };
    const asked = (
      await decide(approval.id, { verdict: 'changes_requested', feedback: 'Half of it, please.', suggestedPayload: suggested }).expect(200)
    ).body as View;
    const woke = (await waiting).body as View;
    for (const view of [asked, woke]) {
      expect(view).toMatchObject({
        status: 'changes_requested',
        feedback: 'Half of it, please.',
        suggestedPayload: suggested,
        decidedBy: { type: 'api_key', id: org.reviewerKeyId },
        expiresAt: approval.expiresAt,
        revision: 1,
      });
      expect(view.decidedAt).not.toBeNull();
      expect(view.votes).toMatchObject([{ verdict: 'changes_requested', by: { id: org.reviewerKeyId } }]);
    }
    // A request waiting for changes is listed by its status.
    const listed = (await org.request('get', '/v1/approvals?status=changes_requested').expect(200)).body.approvals as View[];
    expect(listed.map((view) => view.id)).toContain(approval.id);

    // The agent revises: the same approval, pending again, with a fresh deadline and no votes.
    const revised = (await revise(approval.id, { payload: suggested, note: 'Halved.' }).expect(201)).body as View;
    expect(revised).toMatchObject({
      id: approval.id,
      status: 'pending',
      payload: suggested,
      feedback: null,
      decidedBy: null,
      decidedAt: null,
      votes: [],
      revision: 2,
    });
    expect(revised).not.toHaveProperty('suggestedPayload');
    expect(Date.parse(revised.expiresAt!)).toBeGreaterThan(Date.parse(approval.expiresAt!));
    expect(revised.revisions).toEqual([
      approval.revisions[0],
      {
        revision: 2,
        payloadHash: revised.payloadHash,
        note: 'Halved.',
        feedback: 'Half of it, please.',
        requestedBy: { type: 'api_key', id: org.reviewerKeyId },
        at: expect.any(String),
      },
    ]);
    expect(revised.payloadHash).not.toBe(approval.payloadHash);

    // The same reviewer may vote again on the new revision: its votes start afresh.
    const secondWait = org.request('get', `/v1/approvals/${approval.id}?wait=20`).then((res) => res);
    await eventually(() => env.services.settlements.waiting === 1);
    await decide(approval.id, { verdict: 'approved', feedback: 'Good.', revision: 2 }).expect(200);
    expect((await secondWait).body).toMatchObject({ status: 'approved', revision: 2, feedback: 'Good.', payload: suggested });

    // Up to WEBHOOK_ENDPOINT_CONCURRENCY attempts are in flight to one endpoint, so the revision and the
    // approval right after it may arrive in either order: a receiver orders them by createdAt.
    await receiver.waitFor(() => receiver.at(path).length >= 3);
    const inOrder = receiver.at(path).sort((a, b) => Date.parse(a.body.createdAt) - Date.parse(b.body.createdAt));
    expect(inOrder.map((delivery) => [delivery.body.type, delivery.body.data.revision])).toEqual([
      ['approval.changes_requested', 1],
      ['approval.revised', 2],
      ['approval.approved', 2],
    ]);
    const [changes, revisedEvent] = inOrder;
    expect(changes!.body.data).toMatchObject({
      approvalId: approval.id,
      status: 'changes_requested',
      verdict: 'changes_requested',
      feedback: 'Half of it, please.',
      suggestedPayload: suggested,
      decidedBy: { type: 'api_key', id: org.reviewerKeyId },
      payloadHash: approval.payloadHash,
    });
    expect(revisedEvent!.body.data).toMatchObject({
      status: 'pending',
      payload: suggested,
      payloadHash: revised.payloadHash,
      note: 'Halved.',
      feedback: 'Half of it, please.',
    });

    // The chain keeps each revision's payload, in order, and verifies.
    const chain = await readChain(env.services.db, org.orgId);
    expect(chainProblem(chain)).toBeNull();
    const ours = chain.filter((event) => event.data.approvalId === approval.id);
    expect(ours.map((event) => event.type)).toEqual([
      'approval.created',
      'approval.changes_requested',
      'approval.revised',
      'approval.approved',
    ]);
    expect(ours[0]!.data.payload).toEqual({ amount: 500, currency: 'EUR' });
    expect(ours[1]!.data).toMatchObject({ feedback: 'Half of it, please.', suggestedPayload: suggested, revision: 1 });
    expect(ours[2]!.data).toMatchObject({ payload: suggested, revision: 2, note: 'Halved.', payloadHash: revised.payloadHash });
    const verification = (await org.request('get', '/v1/audit?verify=true&limit=1').expect(200)).body.verification;
    expect(verification).toMatchObject({ intact: true });
  });

  it('evaluates the policy again: a revision it allows is approved at once (200), by the policy', async () => {
    const approval = await create({ amount: 500 });
    await requestChanges(approval.id);
    const res = await revise(approval.id, { payload: { amount: 80 } }).expect(200);
    expect(res.body).toMatchObject({ status: 'approved', revision: 2, decidedBy: { type: 'policy', id: 'refunds' }, expiresAt: null });
    const chain = await readChain(env.services.db, org.orgId);
    const types = chain.filter((event) => event.data.approvalId === approval.id).map((event) => event.type);
    expect(types).toEqual(['approval.created', 'approval.changes_requested', 'approval.revised', 'approval.approved']);
  });

  it('keeps the context unless the revision gives one, and tells the reviewers the revision as a new request', async () => {
    const created = (
      await org
        .request('post', '/v1/approvals')
        .send({ action: 'refund', payload: { amount: 500 }, policyKey: 'refunds', context: { why: 'late parcel' } })
        .expect(201)
    ).body as View;
    await requestChanges(created.id);
    const kept = (await revise(created.id, { payload: { amount: 400 } }).expect(201)).body as View;
    expect(kept.context).toEqual({ why: 'late parcel' });
    await requestChanges(created.id);
    const replaced = (await revise(created.id, { payload: { amount: 300 }, context: { why: 'damaged' } }).expect(201)).body as View;
    expect(replaced.context).toEqual({ why: 'damaged' });
    await requestChanges(created.id);
    const cleared = (await revise(created.id, { payload: { amount: 200 }, context: null }).expect(201)).body as View;
    expect(cleared).not.toHaveProperty('context');
    expect(cleared.revisions.map((revision) => revision.revision)).toEqual([1, 2, 3, 4]);
  });

  it('applies quorum and self-approval to each revision afresh', async () => {
    await org.request('put', '/v1/policies/two').send({ quorum: 2, timeoutSeconds: 600 }).expect(200);
    const third = await env.createKey(org.orgId, ['approvals:decide', 'approvals:read']);
    const asThird = (id: string, body: Record<string, unknown>) =>
      env.http.post(`/v1/approvals/${id}/decision`).set('authorization', `Bearer ${third.key}`).send(body);
    const approval = await create({ amount: 500 }, 'two');
    expect((await asThird(approval.id, { verdict: 'approved' }).expect(200)).body).toMatchObject({ status: 'pending' });
    await requestChanges(approval.id);
    const revised = (await revise(approval.id, { payload: { amount: 400 } }).expect(201)).body as View;
    expect(revised.votes).toEqual([]);
    // The first revision's approving vote does not count toward the second's quorum.
    expect((await asThird(approval.id, { verdict: 'approved' }).expect(200)).body).toMatchObject({ status: 'pending', revision: 2 });
    // The requester still may not vote on its own request.
    const self = await org.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved' }).expect(403);
    expect(self.body.code).toBe('self_approval');
    expect((await decide(approval.id, { verdict: 'approved' }).expect(200)).body).toMatchObject({ status: 'approved' });
  });

  it('answers a replay of the idempotency key with the revision it made, also when replays race', async () => {
    const approval = await create();
    await requestChanges(approval.id);
    const body = { payload: { amount: 300 }, idempotencyKey: 'rev-a' };
    const answers = await Promise.all(Array.from({ length: 10 }, () => revise(approval.id, body)));
    expect(answers.map((res) => res.status)).toEqual(answers.map(() => 201));
    expect(new Set(answers.map((res) => (res.body as View).revision))).toEqual(new Set([2]));
    const after = await read(approval.id);
    expect(after.revisions).toHaveLength(2);
    // Later, even with another body, the key still answers that revision and changes nothing.
    await requestChanges(approval.id);
    const replay = (await revise(approval.id, { payload: { amount: 1 }, idempotencyKey: 'rev-a' }).expect(201)).body as View;
    expect(replay).toMatchObject({ status: 'changes_requested', revision: 2 });
    expect((await revise(approval.id, { payload: { amount: 200 }, idempotencyKey: 'rev-b' }).expect(201)).body.revision).toBe(3);
  });
});

describe('races and limits', () => {
  it('refuses late votes for the settled revision (409) while a revision races them, and counts none of them', async () => {
    for (let round = 0; round < 5; round++) {
      const approval = await create();
      await requestChanges(approval.id);
      const voters = await Promise.all(Array.from({ length: 8 }, () => env.createKey(org.orgId, ['approvals:decide'])));
      const late = voters.map((voter) =>
        env.http
          .post(`/v1/approvals/${approval.id}/decision`)
          .set('authorization', `Bearer ${voter.key}`)
          .send({ verdict: 'approved', revision: 1 }),
      );
      const [revision, ...votes] = await Promise.all([revise(approval.id, { payload: { amount: 400 + round } }), ...late]);
      expect(revision.status).toBe(201);
      for (const vote of votes) {
        expect(vote.status).toBe(409);
        expect(vote.body.code).toBe('conflict');
      }
      expect(await read(approval.id)).toMatchObject({ status: 'pending', revision: 2, votes: [] });
    }
  });

  it('counts a vote that names no revision on the revision it reached, whichever came first', async () => {
    const approval = await create();
    await requestChanges(approval.id);
    const voters = await Promise.all(Array.from({ length: 8 }, () => env.createKey(org.orgId, ['approvals:decide'])));
    const [revision, ...votes] = await Promise.all([
      revise(approval.id, { payload: { amount: 400 } }),
      ...voters.map((voter) =>
        env.http.post(`/v1/approvals/${approval.id}/decision`).set('authorization', `Bearer ${voter.key}`).send({ verdict: 'approved' }),
      ),
    ]);
    expect(revision.status).toBe(201);
    const after = await read(approval.id);
    const accepted = votes.filter((vote) => vote.status === 200);
    // Before the revision a vote is 409 (changes are requested); after it, the first approval settles it.
    expect(votes.every((vote) => vote.status === 200 || vote.status === 409)).toBe(true);
    expect(accepted.length).toBeLessThanOrEqual(1);
    expect(after.status).toBe(accepted.length === 1 ? 'approved' : 'pending');
    expect(after.revision).toBe(2);
  });

  it('lets one of many concurrent revisions win; the others are 409', async () => {
    for (let round = 0; round < 3; round++) {
      const approval = await create();
      await requestChanges(approval.id);
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => revise(approval.id, { payload: { amount: 300 + i } })));
      const statuses = answers.map((res) => res.status).sort();
      expect(statuses).toEqual([201, ...Array.from({ length: 11 }, () => 409)]);
      for (const res of answers.filter((answer) => answer.status === 409)) expect(res.body.code).toBe('conflict');
      const after = await read(approval.id);
      expect(after.revisions).toHaveLength(2);
      const winner = answers.find((res) => res.status === 201)!.body as View;
      expect(after.payload).toEqual(winner.payload);
    }
  });

  it('allows 10 revisions after the original; the 11th is 409', async () => {
    const approval = await create();
    for (let revision = 2; revision <= 11; revision++) {
      await requestChanges(approval.id, `round ${revision}`);
      expect((await revise(approval.id, { payload: { amount: 1000 + revision } }).expect(201)).body.revision).toBe(revision);
    }
    await requestChanges(approval.id, 'once more');
    const refused = await revise(approval.id, { payload: { amount: 5000 } }).expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', status: 409 });
    expect(refused.body.detail).toContain('10 revisions');
    const after = await read(approval.id);
    expect(after).toMatchObject({ status: 'changes_requested', revision: 11 });
    expect(after.revisions.map((revision) => revision.revision)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('lets only the principal that created the request revise it (403 forbidden), a key it made included', async () => {
    const approval = await create();
    await requestChanges(approval.id);
    // Another service key of the organization, with every scope: refused, and nothing changes.
    const other = await revise(approval.id, { payload: { amount: 1 } }, { ...org, request: org.asReviewer }).expect(403);
    expect(other.body.code).toBe('forbidden');
    // Another organization's key: the approval does not exist for it.
    const stranger = await env.createOrg();
    await revise(approval.id, { payload: { amount: 1 } }, stranger).expect(404);
    expect(await read(approval.id)).toMatchObject({ status: 'changes_requested', revision: 1 });
    // A key the creating key made stands for the same principal.
    const made = (
      await org
        .request('post', '/v1/keys')
        .send({ name: 'agent child', scopes: ['approvals:write'] })
        .expect(201)
    ).body as {
      secret: string;
    };
    const res = await env.http
      .post(`/v1/approvals/${approval.id}/revisions`)
      .set('authorization', `Bearer ${made.secret}`)
      .send({ payload: { amount: 300 } })
      .expect(201);
    expect(res.body).toMatchObject({ status: 'pending', revision: 2 });
  });

  it('answers 409 to a revision of a request no reviewer asked to change, 404 to an unknown id', async () => {
    const approval = await create();
    expect((await revise(approval.id, { payload: { amount: 1 } }).expect(409)).body.code).toBe('conflict');
    await decide(approval.id, { verdict: 'rejected', feedback: 'no' }).expect(200);
    await revise(approval.id, { payload: { amount: 1 } }).expect(409);
    await revise('00000000-0000-4000-8000-000000000000', { payload: { amount: 1 } }).expect(404);
    await revise('not-a-uuid', { payload: { amount: 1 } }).expect(404);
  });

  it('expires a request still waiting for changes at its deadline, as a pending one', async () => {
    const path = '/expiry';
    await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url(path), events: ['approval.changes_requested', 'approval.expired'] })
      .expect(201);
    const approval = await create({ amount: 500 }, 'short');
    const asked = await requestChanges(approval.id);
    expect(asked.expiresAt).toBe(approval.expiresAt);
    const expired = await eventually(async () => {
      const view = await read(approval.id);
      return view.status === 'expired' ? view : null;
    });
    expect(expired).toMatchObject({ expiresAt: null, decidedBy: null, decidedAt: null, feedback: null });
    expect(expired).not.toHaveProperty('suggestedPayload');
    await revise(approval.id, { payload: { amount: 1 } }).expect(409);
    const deliveries = await receiver.waitFor(() => receiver.at(path).length >= 2);
    expect(deliveries.filter((delivery) => delivery.path === path).map((delivery) => delivery.body.type)).toEqual([
      'approval.changes_requested',
      'approval.expired',
    ]);
  });
});

describe('bad input', () => {
  it('requires feedback of 1 to 2,000 characters with a request for changes', async () => {
    const approval = await create();
    const missing = await decide(approval.id, { verdict: 'changes_requested' }).expect(422);
    expect(missing.body.errors).toEqual([expect.objectContaining({ path: 'feedback' })]);
    const empty = await decide(approval.id, { verdict: 'changes_requested', feedback: '' }).expect(422);
    expect(empty.body.errors).toEqual([expect.objectContaining({ path: 'feedback' })]);
    const long = await decide(approval.id, { verdict: 'changes_requested', feedback: 'x'.repeat(2001) }).expect(422);
    expect(long.body.errors).toEqual([expect.objectContaining({ path: 'feedback' })]);
    expect((await read(approval.id)).status).toBe('pending');
    await decide(approval.id, { verdict: 'changes_requested', feedback: 'x'.repeat(2000) }).expect(200);
  });

  it('refuses a suggested payload that is not a JSON object, or that comes with another verdict', async () => {
    const approval = await create();
    for (const suggestedPayload of [[1, 2], 'text', 3, null]) {
      const res = await decide(approval.id, { verdict: 'changes_requested', feedback: 'change it', suggestedPayload }).expect(422);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'suggestedPayload' })]);
    }
    const withApproval = await decide(approval.id, { verdict: 'approved', suggestedPayload: { amount: 1 } }).expect(422);
    expect(withApproval.body.errors).toEqual([expect.objectContaining({ path: 'suggestedPayload' })]);
    const edited = await decide(approval.id, { verdict: 'changes_requested', feedback: 'x', editedPayload: { amount: 1 } }).expect(422);
    expect(edited.body.errors).toEqual([expect.objectContaining({ path: 'editedPayload' })]);
    const badRevision = await decide(approval.id, { verdict: 'approved', revision: 0 }).expect(422);
    expect(badRevision.body.errors).toEqual([expect.objectContaining({ path: 'revision' })]);
    expect((await read(approval.id)).status).toBe('pending');
  });

  it("refuses a revision's payload with NUL or 5,000 levels of nesting, naming the field, and changes nothing", async () => {
    const approval = await create();
    await requestChanges(approval.id);
    const nul = await revise(approval.id, { payload: { memo: 'a\u0000b' } }).expect(422);
    expect(nul.body.errors).toEqual([expect.objectContaining({ path: 'payload.memo' })]);
    const deep = '{"payload":' + '{"n":'.repeat(5000) + '1' + '}'.repeat(5000) + '}';
    const nested = await org.request('post', `/v1/approvals/${approval.id}/revisions`).set('content-type', 'application/json').send(deep);
    expect(nested.status).toBe(422);
    expect(nested.body.errors[0].path).toMatch(/^payload/);
    for (const body of [
      {},
      { payload: [1] },
      { payload: { a: 1 }, note: '' },
      { payload: { a: 1 }, note: 'x'.repeat(2001) },
      { payload: { a: 1 }, idempotencyKey: '' },
    ]) {
      const res = await revise(approval.id, body).expect(422);
      expect(res.body.code).toBe('validation_failed');
    }
    expect(await read(approval.id)).toMatchObject({ status: 'changes_requested', revision: 1 });
  });

  it('needs the approvals:write scope to revise', async () => {
    const approval = await create();
    await requestChanges(approval.id);
    const reader = await env.createKey(org.orgId, ['approvals:read']);
    const res = await env.http
      .post(`/v1/approvals/${approval.id}/revisions`)
      .set('authorization', `Bearer ${reader.key}`)
      .send({ payload: { amount: 1 } })
      .expect(403);
    expect(res.body.code).toBe('forbidden');
  });
});
