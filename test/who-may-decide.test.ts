import { beforeAll, describe, expect, it } from 'vitest';
import { readChain } from './support/audit-chain.js';
import { createMember, type TestMember } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

let alice: TestMember;
let bob: TestMember;
let carol: TestMember;

beforeAll(async () => {
  [alice, bob, carol] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'admin', 'carol@acme.test'),
  ]);
  await org.request('put', '/v1/policies/two-eyes').send({ quorum: 2 }).expect(200);
  await org.request('put', '/v1/policies/three-eyes').send({ quorum: 3 }).expect(200);
  await org
    .request('put', '/v1/policies/admins-only')
    .send({ reviewers: { roles: ['admin'] } })
    .expect(200);
  await org
    .request('put', '/v1/policies/named')
    .send({ reviewers: { members: ['Alice@Acme.test'] } })
    .expect(200);
  await org
    .request('put', '/v1/policies/console-only')
    .send({ channels: ['console'] })
    .expect(200);
  await org
    .request('put', '/v1/policies/api-only')
    .send({ channels: ['api'] })
    .expect(200);
  await org.request('put', '/v1/policies/self-ok').send({ allowSelfApproval: true }).expect(200);
  await org.request('put', '/v1/policies/default').send({}).expect(200);
});

async function request(policyKey: string, extra: Record<string, unknown> = {}) {
  return (
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'pay', payload: { amount: 5000 }, policyKey, ...extra })
      .expect(201)
  ).body as {
    id: string;
    quorum: number;
  };
}

const vote = (as: TestMember, id: string, body: Record<string, unknown> = { verdict: 'approved' }) =>
  as.request('post', `/v1/approvals/${id}/decision`).send(body);

async function webhooksOf(approvalId: string, type: string): Promise<number> {
  const rows = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, eventType: type } });
  return rows.filter((row) => (row.body as { data: { approvalId: string } }).data.approvalId === approvalId).length;
}

describe('quorum', () => {
  it('settles when approvals from distinct reviewers reach it, with each vote recorded', async () => {
    const { id, quorum } = await request('two-eyes');
    expect(quorum).toBe(2);
    const first = await vote(alice, id, { verdict: 'approved', feedback: 'fine by me' }).expect(200);
    expect(first.body).toMatchObject({ status: 'pending', decidedBy: null, feedback: null });
    expect(first.body.votes).toEqual([
      {
        by: { type: 'user', id: alice.id, email: alice.email },
        verdict: 'approved',
        feedback: 'fine by me',
        at: expect.stringMatching(/Z$/),
        stage: null,
      },
    ]);
    expect(await webhooksOf(id, 'approval.approved')).toBe(0);

    const second = await vote(bob, id, { verdict: 'approved', feedback: 'ok' }).expect(200);
    expect(second.body).toMatchObject({ status: 'approved', feedback: 'ok', decidedBy: { type: 'user', id: bob.id, email: bob.email } });
    expect(second.body.votes.map((v: { by: { id: string } }) => v.by.id)).toEqual([alice.id, bob.id]);
    expect(await webhooksOf(id, 'approval.approved')).toBe(1);

    const chain = await readChain(env.services.db, org.orgId);
    const events = chain.filter((event) => event.data.approvalId === id).map((event) => event.type);
    expect(events).toEqual(['approval.created', 'approval.vote_recorded', 'approval.approved']);
    const recorded = chain.find((event) => event.type === 'approval.vote_recorded' && event.data.approvalId === id)!;
    expect(JSON.parse(recorded.actor)).toEqual({ type: 'user', id: alice.id });
    expect(recorded.data).toMatchObject({ verdict: 'approved', feedback: 'fine by me', quorum: 2 });
  });

  it('two reviewers approving at the same moment settle it once, ten times over, with both votes kept', async () => {
    for (let round = 0; round < 10; round++) {
      const { id } = await request('two-eyes');
      const [a, b] = await Promise.all([vote(alice, id), vote(bob, id)]);
      expect([a.status, b.status]).toEqual([200, 200]);
      // Each answer shows the approval as it is once its vote committed: the later one sees it approved.
      expect([a.body.status, b.body.status]).toContain('approved');
      const chain = await readChain(env.services.db, org.orgId);
      expect(chain.filter((event) => event.data.approvalId === id).map((event) => event.type)).toEqual([
        'approval.created',
        'approval.vote_recorded',
        'approval.approved',
      ]);
      const stored = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
      expect(stored.status).toBe('approved');
      expect(stored.votes).toHaveLength(2);
      expect([a.body, b.body]).toContainEqual(stored);
      expect(await webhooksOf(id, 'approval.approved')).toBe(1);
    }
  });

  it('answers 409 to a second vote by the same voter, also when both come at once', async () => {
    const { id } = await request('three-eyes');
    await vote(alice, id).expect(200);
    const again = await vote(alice, id).expect(409);
    expect(again.body.detail).toContain('already voted');
    const { id: racing } = await request('three-eyes');
    const results = await Promise.all(Array.from({ length: 5 }, () => vote(bob, racing)));
    expect(results.map((res) => res.status).sort()).toEqual([200, 409, 409, 409, 409]);
  });

  it('rejects at the first rejection among approvals, once', async () => {
    const { id } = await request('three-eyes');
    await vote(alice, id).expect(200);
    const rejected = await vote(bob, id, { verdict: 'rejected', feedback: 'too much' }).expect(200);
    expect(rejected.body).toMatchObject({ status: 'rejected', feedback: 'too much', decidedBy: { id: bob.id } });
    await vote(carol, id).expect(409);
    expect(await webhooksOf(id, 'approval.rejected')).toBe(1);
  });

  it('refuses an edited payload when more than one approval is needed', async () => {
    const { id } = await request('two-eyes');
    const res = await vote(alice, id, { verdict: 'approved', editedPayload: { amount: 1 } }).expect(422);
    expect(res.body.errors).toEqual([{ path: 'editedPayload', message: expect.stringContaining('2 approvals') }]);
  });
});

describe('refusals', () => {
  it('not_a_reviewer: a member whose role the policy does not name', async () => {
    const { id } = await request('admins-only');
    const refused = await vote(alice, id).expect(403);
    expect(refused.body).toMatchObject({ status: 403, code: 'not_a_reviewer', detail: expect.stringContaining("'admins-only'") });
    await vote(carol, id).expect(200);
  });

  it('a member named by email is entitled whatever their role among reviewers and admins, others are not', async () => {
    const { id } = await request('named');
    await vote(bob, id).expect(403);
    await vote(carol, id).expect(403);
    await vote(alice, id).expect(200);
  });

  it('self_approval: the key that created a request cannot decide it, nor the member it is on behalf of', async () => {
    const { id } = await request('default');
    const own = await org.request('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(403);
    expect(own.body).toMatchObject({ code: 'self_approval', detail: expect.stringContaining('another reviewer') });

    const onBehalf = await request('default', { onBehalfOf: 'ALICE@acme.test' });
    expect((await vote(alice, onBehalf.id).expect(403)).body.code).toBe('self_approval');
    await vote(bob, onBehalf.id).expect(200);
  });

  it('allows self-approval where the policy says so', async () => {
    const { id } = await request('self-ok', { onBehalfOf: 'alice@acme.test' });
    await org.request('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
    const other = await request('self-ok', { onBehalfOf: 'alice@acme.test' });
    await vote(alice, other.id).expect(200);
  });

  it('orphans fall under the defaults: the creating key cannot approve its own', async () => {
    const { id } = await request('no-such-policy');
    expect((await org.request('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(403)).body.code).toBe(
      'self_approval',
    );
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
  });

  it('channel_not_allowed: an API key where only the console may decide, a member where only the API may', async () => {
    const consoleOnly = await request('console-only');
    const byKey = await org.asReviewer('post', `/v1/approvals/${consoleOnly.id}/decision`).send({ verdict: 'approved' }).expect(403);
    expect(byKey.body).toMatchObject({ code: 'channel_not_allowed', detail: expect.stringContaining('console') });
    await vote(alice, consoleOnly.id).expect(200);

    const apiOnly = await request('api-only');
    expect((await vote(alice, apiOnly.id).expect(403)).body.code).toBe('channel_not_allowed');
    await org.asReviewer('post', `/v1/approvals/${apiOnly.id}/decision`).send({ verdict: 'approved' }).expect(200);
  });

  it('an escalation successor keeps who asked and for whom, who still may not decide it', async () => {
    await org
      .request('put', '/v1/policies/escalating')
      .send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'default' })
      .expect(200);
    const first = await request('escalating', { onBehalfOf: 'bob@acme.test' });
    // What the expiry worker does at the deadline.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await env.services.approvals.timeOut(org.orgId, first.id, { type: 'system', id: 'expiry-worker' })).kind).toBe('settled');
    const escalated = (await org.request('get', `/v1/approvals/${first.id}`).expect(200)).body;
    const successor = (await org.request('get', `/v1/approvals/${escalated.escalatedTo}`).expect(200)).body;
    expect(successor).toMatchObject({ status: 'pending', onBehalfOf: 'bob@acme.test', escalatedFrom: first.id });
    expect((await vote(bob, successor.id).expect(403)).body.code).toBe('self_approval');
    expect((await org.request('post', `/v1/approvals/${successor.id}/decision`).send({ verdict: 'approved' }).expect(403)).body.code).toBe(
      'self_approval',
    );
    await vote(alice, successor.id).expect(200);
  });
});

describe('the inbox: GET /v1/approvals?decidable=true', () => {
  it('lists only what the caller may still decide', async () => {
    const open = await request('two-eyes');
    const voted = await request('two-eyes');
    await vote(alice, voted.id).expect(200);
    const forAlice = await request('default', { onBehalfOf: 'alice@acme.test' });
    const adminsOnly = await request('admins-only');
    const apiOnly = await request('api-only');

    const ids = async (as: TestMember) =>
      (
        (await as.request('get', '/v1/approvals').query({ decidable: 'true', limit: 200 }).expect(200)).body.approvals as { id: string }[]
      ).map((approval) => approval.id);
    const aliceSees = await ids(alice);
    expect(aliceSees).toContain(open.id);
    for (const hidden of [voted.id, forAlice.id, adminsOnly.id, apiOnly.id]) expect(aliceSees).not.toContain(hidden);
    const carolSees = await ids(carol);
    expect(carolSees).toEqual(expect.arrayContaining([open.id, voted.id, forAlice.id, adminsOnly.id]));
    expect(carolSees).not.toContain(apiOnly.id);
    // For an API key, the api channel and its own requests count.
    const reviewerKeySees = (
      (await org.asReviewer('get', '/v1/approvals?decidable=true&limit=200').expect(200)).body.approvals as { id: string }[]
    ).map((approval) => approval.id);
    expect(reviewerKeySees).toContain(apiOnly.id);
    const agentSees = (await org.request('get', '/v1/approvals?decidable=true').expect(200)).body.approvals;
    expect(agentSees).toEqual([]);
  });
});

describe('policy documents', () => {
  it.each([
    ['a viewer role', { reviewers: { roles: ['viewer'] } }, 'reviewers.roles.0'],
    ['a bad member email', { reviewers: { members: ['not-an-email'] } }, 'reviewers.members.0'],
    ['an unknown reviewers field', { reviewers: { teams: ['x'] } }, 'reviewers.teams'],
    ['quorum 0', { quorum: 0 }, 'quorum'],
    ['quorum 11', { quorum: 11 }, 'quorum'],
    ['quorum 1.5', { quorum: 1.5 }, 'quorum'],
    ['an unknown channel', { channels: ['sms'] }, 'channels.0'],
    ['no channel', { channels: [] }, 'channels'],
    ['a repeated channel', { channels: ['api', 'api'] }, 'channels'],
    ['allowSelfApproval not a boolean', { allowSelfApproval: 'yes' }, 'allowSelfApproval'],
  ])('refuses %s with 422 naming the field', async (_name, body, path) => {
    const res = await org.request('put', '/v1/policies/bad').send(body).expect(422);
    expect(res.body.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('stores and returns who may decide, with the defaults filled in', async () => {
    const res = await org.request('get', '/v1/policies/default').expect(200);
    expect(res.body).toMatchObject({
      reviewers: { roles: ['reviewer', 'admin'], members: [] },
      quorum: 1,
      allowSelfApproval: false,
      channels: ['api', 'console', 'email', 'slack', 'teams'],
    });
    expect((await org.request('get', '/v1/policies/named').expect(200)).body.reviewers).toEqual({
      roles: [],
      members: ['alice@acme.test'],
    });
  });
});

describe('POST /v1/policies/:key/evaluate', () => {
  beforeAll(async () => {
    await org
      .request('put', '/v1/policies/refunds')
      .send({
        rules: [
          { when: "action == 'refund' && payload.amount <= 100", outcome: 'allow' },
          { when: 'payload.flag', outcome: 'allow' },
        ],
      })
      .expect(200);
  });

  const evaluate = (key: string, body: Record<string, unknown>) => org.request('post', `/v1/policies/${key}/evaluate`).send(body);

  it('evaluates the stored policy: the rule that matched, or the default', async () => {
    expect((await evaluate('refunds', { action: 'refund', payload: { amount: 50 } }).expect(200)).body).toEqual({
      outcome: 'allow',
      matchedRule: 0,
      error: null,
    });
    expect((await evaluate('refunds', { action: 'refund', payload: { amount: 500, flag: false } }).expect(200)).body).toEqual({
      outcome: 'review',
      matchedRule: null,
      error: null,
    });
  });

  it('names the rule that failed and why, failing closed to review', async () => {
    const res = await evaluate('refunds', { action: 'refund', payload: { amount: 500 } }).expect(200);
    expect(res.body).toMatchObject({ outcome: 'review', matchedRule: 1, error: expect.stringContaining('rules.1.when') });
  });

  it('evaluates a draft instead of the stored policy, and refuses a draft that does not compile', async () => {
    const draft = { rules: [{ when: 'payload.amount > 10', outcome: 'allow' }] };
    expect((await evaluate('refunds', { action: 'x', payload: { amount: 11 }, policy: draft }).expect(200)).body).toMatchObject({
      outcome: 'allow',
      matchedRule: 0,
    });
    // A draft needs no stored policy under the key.
    await evaluate('not-stored-yet', { action: 'x', payload: { amount: 11 }, policy: draft }).expect(200);
    const broken = await evaluate('refunds', {
      action: 'x',
      payload: {},
      policy: { rules: [{ when: 'payload.amount >', outcome: 'allow' }] },
    }).expect(422);
    expect(broken.body.errors).toEqual([{ path: 'policy.rules.0.when', message: expect.stringContaining('Rule 0') }]);
  });

  it('answers 404 for an unknown key without a draft, 422 for a bad request, 403 without policies:read', async () => {
    await evaluate('nothing-here', { action: 'x', payload: {} }).expect(404);
    const invalid = await evaluate('refunds', { action: 'x', payload: 'no' }).expect(422);
    expect(invalid.body.errors.map((error: { path: string }) => error.path)).toEqual(['payload']);
    const writer = await env.createKey(org.orgId, ['approvals:write']);
    await env.http
      .post('/v1/policies/refunds/evaluate')
      .set('authorization', `Bearer ${writer.key}`)
      .send({ action: 'x', payload: {} })
      .expect(403);
  });

  it('creates nothing and leaves the audit chain as it was', async () => {
    const before = await readChain(env.services.db, org.orgId);
    const approvals = await env.services.db.approval.count({ where: { orgId: org.orgId } });
    await evaluate('refunds', { action: 'refund', payload: { amount: 1 } }).expect(200);
    expect(await readChain(env.services.db, org.orgId)).toEqual(before);
    expect(await env.services.db.approval.count({ where: { orgId: org.orgId } })).toBe(approvals);
  });
});
