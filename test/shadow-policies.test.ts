import { describe, expect, it } from 'vitest';
import { createApproval } from '../src/modules/approvals/approval-transitions.js';
import { creationItem } from '../src/modules/approvals/approval-writes.js';
import { evaluatePolicy } from '../src/modules/policies/policy-rules.js';
import { chainProblem, readChain } from './support/audit-chain.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const live = { rules: [{ when: 'payload.amount <= 100.0', outcome: 'allow' }] };
const tighter = { rules: [{ when: 'payload.amount <= 50.0', outcome: 'allow' }] };

async function createdEvent(orgId: string, approvalId: string) {
  const chain = await readChain(env.services.db, orgId);
  return chain.find((event) => event.type === 'approval.created' && event.data.approvalId === approvalId)!.data;
}

const shadowOutcomeOf = async (id: string) => (await env.services.db.approval.findUnique({ where: { id } }))!.shadowOutcome;

describe('shadow policies', () => {
  it('evaluates the shadow at every creation, records its outcome, and never lets it decide', async () => {
    const put = await org
      .request('put', '/v1/policies/shadowed')
      .send({ ...live, shadow: tighter })
      .expect(200);
    expect(put.body.shadow).toMatchObject({ rules: tighter.rules, defaultOutcome: 'review' });

    const views = [];
    for (const amount of [10, 75, 500]) {
      views.push((await org.request('post', '/v1/approvals').send({ action: 'refund', payload: { amount }, policyKey: 'shadowed' })).body);
    }
    // The live policy decided: 75 is approved although the shadow would have it reviewed.
    expect(views.map((view) => view.status)).toEqual(['approved', 'approved', 'pending']);
    expect(await Promise.all(views.map((view) => shadowOutcomeOf(view.id)))).toEqual([
      { outcome: 'allow', matchedRule: 0 },
      { outcome: 'review', matchedRule: null },
      { outcome: 'review', matchedRule: null },
    ]);
    expect(await createdEvent(org.orgId, views[1].id)).toMatchObject({
      outcome: 'allow',
      matchedRule: 0,
      shadowOutcome: { outcome: 'review', matchedRule: null },
    });
    // Without a shadow, nothing is recorded.
    await org.request('put', '/v1/policies/plain').send(live).expect(200);
    const plain = (await org.request('post', '/v1/approvals').send({ action: 'refund', payload: { amount: 1 }, policyKey: 'plain' })).body;
    expect(await shadowOutcomeOf(plain.id)).toBeNull();
    expect(await createdEvent(org.orgId, plain.id)).not.toHaveProperty('shadowOutcome');

    const summary = await org.request('get', '/v1/policies/shadowed/shadow').expect(200);
    expect(summary.body).toEqual({
      since: put.body.updatedAt,
      evaluated: 3,
      agreed: 2,
      disagreed: [{ live: 'allow', shadow: 'review', count: 1, examples: [{ approvalId: views[1].id, createdAt: views[1].createdAt }] }],
    });
    expect((await org.request('get', '/v1/policies/plain/shadow').expect(200)).body).toEqual({
      since: null,
      evaluated: 0,
      agreed: 0,
      disagreed: [],
    });
  });

  it('names the newest disagreeing requests of each pair of outcomes, at most 20 of each', async () => {
    // 75 is allowed live and reviewed by the shadow; 500 the other way round; 10 allowed by both.
    const flipped = { rules: [...tighter.rules, { when: 'payload.amount > 200.0', outcome: 'allow' }] };
    await org
      .request('put', '/v1/policies/examples')
      .send({ ...live, shadow: flipped })
      .expect(200);
    const amounts = [...Array.from({ length: 22 }, () => 75), 500, 500, 10];
    await Promise.all(
      amounts.map((amount) => org.request('post', '/v1/approvals').send({ action: 'refund', payload: { amount }, policyKey: 'examples' })),
    );
    const newest = async (amount: number) =>
      (
        await env.services.db.approval.findMany({
          where: { orgId: org.orgId, policyKey: 'examples', payload: { equals: { amount } } },
          orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        })
      ).map((row) => ({ approvalId: row.id, createdAt: row.createdAt.toISOString() }));
    const summary = (await org.request('get', '/v1/policies/examples/shadow').expect(200)).body;
    expect(summary).toMatchObject({ evaluated: 25, agreed: 1 });
    expect(summary.disagreed).toEqual([
      { live: 'allow', shadow: 'review', count: 22, examples: (await newest(75)).slice(0, 20) },
      { live: 'review', shadow: 'allow', count: 2, examples: await newest(500) },
    ]);
  });

  it('keeps the time the shadow was set while PUTs leave it as it is, and starts again with a new one', async () => {
    const first = await org
      .request('put', '/v1/policies/since')
      .send({ ...live, shadow: tighter })
      .expect(200);
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 75 }, policyKey: 'since' })
      .expect(200);
    await org
      .request('put', '/v1/policies/since')
      .send({ ...live, timeoutSeconds: 60, shadow: tighter })
      .expect(200);
    const kept = (await org.request('get', '/v1/policies/since/shadow').expect(200)).body;
    expect(kept).toMatchObject({ since: first.body.updatedAt, evaluated: 1 });

    const changed = await org
      .request('put', '/v1/policies/since')
      .send({ ...live, shadow: { defaultOutcome: 'allow' } })
      .expect(200);
    expect((await org.request('get', '/v1/policies/since/shadow').expect(200)).body).toEqual({
      since: changed.body.updatedAt,
      evaluated: 0,
      agreed: 0,
      disagreed: [],
    });
    await org.request('put', '/v1/policies/since').send(live).expect(200);
    expect((await org.request('get', '/v1/policies/since/shadow').expect(200)).body.since).toBeNull();
  });

  it.each([
    [
      'a shadow rule that does not compile',
      { shadow: { rules: [{ when: 'payload.amount <=', outcome: 'allow' }] } },
      'shadow.rules.0.when',
    ],
    ['a shadow with a shadow', { shadow: { shadow: tighter } }, 'shadow'],
    ['a shadow that is not an object', { shadow: 'tighter' }, 'shadow'],
  ])('refuses %s with 422', async (_name, body, field) => {
    const response = await org.request('put', '/v1/policies/refused').send(body).expect(422);
    expect(response.body.errors.map((error: { path: string }) => error.path).join(' ')).toContain(field);
  });

  it('answers 404 for the shadow of a key with no policy, and of another organization', async () => {
    await org.request('get', '/v1/policies/nothing/shadow').expect(404);
    const other = await env.createOrg();
    await other.request('put', '/v1/policies/theirs').send({ shadow: tighter }).expect(200);
    await org.request('get', '/v1/policies/theirs/shadow').expect(404);
  });

  it('records shadow outcomes in a group-commit batch one of whose items fails', async () => {
    await org
      .request('put', '/v1/policies/batched')
      .send({ ...live, shadow: tighter })
      .expect(200);
    const { document, revision, version } = await env.services.policies.snapshot(org.orgId, 'batched', { fresh: true });
    const actor = { type: 'api_key' as const, id: org.keyId };
    const item = async (amount: number, overrides: Record<string, unknown> = {}) => {
      const request = { action: 'refund', payload: { amount }, agent: null, context: null };
      const [verdict, shadow] = await Promise.all([
        evaluatePolicy(document!, request, org.orgId),
        evaluatePolicy(document!.shadow!, request, org.orgId),
      ]);
      const creation = createApproval(
        { action: 'refund', payload: { amount }, policyKey: 'batched' },
        { kind: 'policy', policy: document!, verdict, shadow, policyRevision: revision, policyVersion: version },
        { actor, requester: actor },
        new Date(),
      );
      const built = creationItem(org.orgId, creation, null);
      return { ...built, approval: { ...built.approval, ...overrides } };
    };
    const items = [await item(10), await item(75, { status: 'no-such-status' }), await item(75), await item(500)];
    const [row] = await env.services.sql.query<{ outcomes: string[] }>(null, "SELECT ag_write_batch('create', $1::jsonb) AS outcomes", [
      JSON.stringify(items),
    ]);
    expect(row!.outcomes).toEqual(['created', expect.stringMatching(/^failed: 22P02 /), 'created', 'created']);
    const written = [items[0]!, items[2]!, items[3]!].map((written) => written.approval.id as string);
    expect(await Promise.all(written.map(shadowOutcomeOf))).toEqual([
      { outcome: 'allow', matchedRule: 0 },
      { outcome: 'review', matchedRule: null },
      { outcome: 'review', matchedRule: null },
    ]);
    for (const id of written) expect(await createdEvent(org.orgId, id)).toHaveProperty('shadowOutcome', await shadowOutcomeOf(id));
    expect(await env.services.db.approval.findUnique({ where: { id: items[1]!.approval.id as string } })).toBeNull();
    expect(chainProblem(await readChain(env.services.db, org.orgId))).toBeNull();
    expect((await org.request('get', '/v1/policies/batched/shadow').expect(200)).body).toMatchObject({
      evaluated: 3,
      agreed: 2,
      disagreed: [{ live: 'allow', shadow: 'review', count: 1 }],
    });
  });

  it('records shadow outcomes of concurrent creations batched together, some refused by the quota', async () => {
    const free = await env.createOrg({ plan: 'free' });
    await free
      .request('put', '/v1/policies/quota')
      .send({ ...live, shadow: tighter })
      .expect(200);
    const limit = env.config.FREE_TIER_MONTHLY_APPROVALS;
    const responses = await Promise.all(
      Array.from({ length: limit + 20 }, (_, index) =>
        free
          .request('post', '/v1/approvals')
          .send({ action: 'refund', payload: { amount: index % 2 === 0 ? 75 : 10 }, policyKey: 'quota' }),
      ),
    );
    expect(responses.filter((response) => response.status === 402)).toHaveLength(20);
    const rows = await env.services.db.approval.findMany({ where: { orgId: free.orgId } });
    expect(rows).toHaveLength(limit);
    for (const row of rows) {
      const amount = (row.payload as { amount: number }).amount;
      expect(row.shadowOutcome).toEqual(amount === 75 ? { outcome: 'review', matchedRule: null } : { outcome: 'allow', matchedRule: 0 });
      expect(row.status).toBe('approved');
    }
    expect(chainProblem(await readChain(env.services.db, free.orgId))).toBeNull();
  });
});
