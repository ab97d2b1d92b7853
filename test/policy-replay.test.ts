import { beforeAll, describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const ints = (n: number) => Array.from({ length: n }, (_, index) => index);
const amounts = [10, 60, 90, 100, 150, 500, 5000, 75];

const create = (policyKey: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  org.request('post', '/v1/approvals').send({ action: 'refund', payload, policyKey, ...extra });

describe('replaying a policy against stored requests', () => {
  let edited: string;
  let createdBetween: { from: string; to: string };

  beforeAll(async () => {
    await org
      .request('put', '/v1/policies/refunds')
      .send({ rules: [{ when: 'payload.amount <= 100.0', outcome: 'allow' }] })
      .expect(200);
    const ids = [];
    for (const amount of amounts) ids.push((await create('refunds', { amount }, { agent: 'bot', context: { n: amount } })).body);
    // A reviewer approved an edit of a pending request: the policy evaluated the original payload.
    const pending = ids.find((view) => view.payload.amount === 500)!;
    edited = pending.id;
    await org
      .asReviewer('post', `/v1/approvals/${pending.id}/decision`)
      .send({ verdict: 'approved', editedPayload: { amount: 20 } })
      .expect(200);
    createdBetween = { from: ids[1]!.createdAt, to: ids[3]!.createdAt };
    // Neither another key's requests nor orphans are replayed.
    await org.request('put', '/v1/policies/others').send({ defaultOutcome: 'allow' }).expect(200);
    await create('others', { amount: 1 }).expect(200);
    await create('nobody', { amount: 1 }).expect(201);
  });

  it('changes nothing when replaying the live version', async () => {
    const replay = await org.request('post', '/v1/policies/refunds/replay').send({}).expect(200);
    expect(replay.body).toEqual({ evaluated: amounts.length, unchanged: amounts.length, changed: [], examples: [] });
    // The same document given as a draft is the same replay.
    const policy = (await org.request('get', '/v1/policies/refunds').expect(200)).body;
    const draft = { rules: policy.rules, defaultOutcome: policy.defaultOutcome };
    expect((await org.request('post', '/v1/policies/refunds/replay').send({ policy: draft }).expect(200)).body).toEqual(replay.body);
  });

  it('counts what a draft that tightens the threshold would change, with examples newest first', async () => {
    const draft = { rules: [{ when: 'payload.amount <= 50.0', outcome: 'allow' }] };
    const replay = await org.request('post', '/v1/policies/refunds/replay').send({ policy: draft }).expect(200);
    // 60, 90, 100 and 75 were allowed and would now be reviewed; the edited 500 stays under review.
    expect(replay.body).toMatchObject({ evaluated: 8, unchanged: 4, changed: [{ from: 'allow', to: 'review', count: 4 }] });
    expect(replay.body.examples.map((example: { would: string; was: string; matchedRule: null }) => [example.was, example.would])).toEqual(
      Array(4).fill(['allow', 'review']),
    );
    expect(replay.body.examples.every((example: { matchedRule: number | null }) => example.matchedRule === null)).toBe(true);
    expect(replay.body.examples.map((example: { approvalId: string }) => example.approvalId)).not.toContain(edited);

    const loosened = await org
      .request('post', '/v1/policies/refunds/replay')
      .send({ policy: { defaultOutcome: 'allow' } })
      .expect(200);
    expect(loosened.body.changed).toEqual([{ from: 'review', to: 'allow', count: 3 }]);

    const ranged = await org
      .request('post', '/v1/policies/refunds/replay')
      .send({ policy: draft, ...createdBetween })
      .expect(200);
    expect(ranged.body).toMatchObject({ evaluated: 3, changed: [{ from: 'allow', to: 'review', count: 3 }] });
    const newest = await org.request('post', '/v1/policies/refunds/replay').send({ policy: draft, limit: 1 }).expect(200);
    expect(newest.body).toMatchObject({ evaluated: 1, changed: [{ count: 1 }] });
  });

  it('bounds a hostile draft as evaluation is bounded: linear patterns, and comprehensions over the budget fail closed', async () => {
    // The first pattern a fresh worker compiles loads RE2 there, which a busy machine may not do within the time limit.
    // A worker stopped for overrunning is replaced by a fresh one, hence until one succeeds.
    for (let attempt = 0; attempt < 5; attempt++) {
      const warm = await org.request('put', '/v1/policies/warm-up').send({ rules: [{ when: 'action.matches("^a$")', outcome: 'allow' }] });
      if (warm.status === 200) break;
    }
    await org.request('put', '/v1/policies/lists').send({ defaultOutcome: 'review' }).expect(200);
    await create('lists', { s: `${'a'.repeat(5000)}!`, l: ints(5000) }).expect(201);
    await create('lists', { s: 'aaa', l: ints(3) }).expect(201);
    const started = Date.now();
    const replay = await org.request('post', '/v1/policies/lists/replay').send({
      policy: {
        rules: [
          { when: 'payload.s.matches("^(a+)+$")', outcome: 'allow' },
          { when: 'payload.l.all(x, payload.l.all(y, x != y + 0.5))', outcome: 'allow' },
        ],
      },
    });
    expect(replay.body.errors ?? []).toEqual([]);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(replay.body).toMatchObject({ evaluated: 2, unchanged: 1, changed: [{ from: 'review', to: 'allow', count: 1 }] });
    // The long list is over the budget: the nested comprehension does not run, and review stands.
    const small = (
      await org
        .request('post', '/v1/policies/lists/replay')
        .send({
          limit: 1,
          policy: { rules: [{ when: 'payload.l.all(x, payload.l.all(y, x != y + 0.5))', outcome: 'allow' }], defaultOutcome: 'allow' },
        })
        .expect(200)
    ).body;
    expect(small).toMatchObject({ evaluated: 1, changed: [{ from: 'review', to: 'allow' }], examples: [{ matchedRule: 0, error: null }] });
    const big = (
      await org
        .request('post', '/v1/policies/lists/replay')
        .send({
          to: new Date(Date.now() + 60_000).toISOString(),
          policy: { rules: [{ when: 'payload.l.all(x, payload.l.all(y, x != y + 0.5))', outcome: 'allow' }] },
        })
        .expect(200)
    ).body;
    expect(big.changed).toEqual([{ from: 'review', to: 'allow', count: 1 }]);
    expect(big.unchanged).toBe(1);
  });

  it.each([
    ['a limit above 10,000', { limit: 10_001 }, 'limit'],
    ['a limit of 0', { limit: 0 }, 'limit'],
    ['a limit that is not an integer', { limit: 1.5 }, 'limit'],
    ['an unknown field', { policyy: {} }, ''],
    ['a from that is not a date', { from: 'yesterday' }, 'from'],
    ['to before from', { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'to'],
    [
      'a draft whose rule does not compile',
      { policy: { rules: [{ when: 'payload.amount <=', outcome: 'allow' }] } },
      'policy.rules.0.when',
    ],
    [
      'a draft with a rule over the budget for every input',
      { policy: { rules: [{ when: `"${'a'.repeat(3000)}".matches("(a{100}){10}")`, outcome: 'allow' }] } },
      'policy.rules.0.when',
    ],
  ])('refuses %s with 422', async (_name, body, field) => {
    const response = await org.request('post', '/v1/policies/refunds/replay').send(body).expect(422);
    expect(response.body.code).toBe('validation_failed');
    if (field) expect(response.body.errors.map((error: { path: string }) => error.path)).toContain(field);
  });

  it('answers 404 without a draft for a key with no policy, and for another organization, which cannot read ours', async () => {
    await org.request('post', '/v1/policies/nobody/replay').send({}).expect(404);
    const other = await env.createOrg();
    await other.request('post', '/v1/policies/refunds/replay').send({}).expect(404);
    // With a draft, their replay sees only their own (no) requests.
    expect((await other.request('post', '/v1/policies/refunds/replay').send({ policy: {} }).expect(200)).body).toEqual({
      evaluated: 0,
      unchanged: 0,
      changed: [],
      examples: [],
    });
  });

  it('needs policies:read, and creates nothing', async () => {
    const key = await env.createKey(org.orgId, ['approvals:write']);
    await env.http.post('/v1/policies/refunds/replay').set('authorization', `Bearer ${key.key}`).send({}).expect(403);
    const before = await env.services.db.approval.count({ where: { orgId: org.orgId } });
    const events = await env.services.db.auditEvent.count({ where: { orgId: org.orgId } });
    await org
      .request('post', '/v1/policies/refunds/replay')
      .send({ policy: { defaultOutcome: 'allow' } })
      .expect(200);
    expect(await env.services.db.approval.count({ where: { orgId: org.orgId } })).toBe(before);
    expect(await env.services.db.auditEvent.count({ where: { orgId: org.orgId } })).toBe(events);
  });
});
