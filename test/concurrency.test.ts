import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainProblem, readChain } from './support/audit-chain.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ DATABASE_POOL_SIZE: '20' });
});
afterAll(() => env.close());

async function orgWithReviewPolicy(): Promise<TestOrg> {
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({ defaultOutcome: 'review' }).expect(200);
  return org;
}

describe('races decided by the database', () => {
  it('50 concurrent creates with one idempotency key make exactly one record', async () => {
    const org = await orgWithReviewPolicy();
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        org.request('post', '/v1/approvals').send({ action: `a${i}`, payload: { i }, policyKey: 'review', idempotencyKey: 'same-key' }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(201));
    const ids = new Set(responses.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    expect(await env.services.db.approval.count({ where: { orgId: org.orgId } })).toBe(1);
    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.filter((e) => e.type === 'approval.created')).toHaveLength(1);
    expect(chainProblem(chain)).toBeNull();
  });

  it('20 concurrent decisions on one approval: one 200, nineteen 409', async () => {
    const org = await orgWithReviewPolicy();
    const created = await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'review' }).expect(201);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        org
          .asReviewer('post', `/v1/approvals/${created.body.id}/decision`)
          .send({ verdict: i % 2 ? 'approved' : 'rejected', feedback: `decider ${i}` }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array(19).fill(409)]);
    const winner = responses.find((r) => r.status === 200)!;
    const stored = await org.request('get', `/v1/approvals/${created.body.id}`).expect(200);
    expect(stored.body).toEqual(winner.body);
    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.filter((e) => e.type === 'approval.approved' || e.type === 'approval.rejected')).toHaveLength(1);
    expect(
      await env.services.db.outboxMessage.count({
        where: { orgId: org.orgId, eventType: { in: ['approval.approved', 'approval.rejected'] } },
      }),
    ).toBe(1);
  });

  it('100 concurrent creates across 5 organizations leave five gap-free chains that recompute', async () => {
    const orgs = await Promise.all(Array.from({ length: 5 }, orgWithReviewPolicy));
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, i) => {
        const org = orgs[i % 5]!;
        // Every other request is auto-approved, so appends of one and of two events interleave.
        const policyKey = i % 2 ? 'review' : 'missing-policy';
        return org.request('post', '/v1/approvals').send({ action: 'race', payload: { i }, policyKey });
      }),
    );
    expect(responses.every((r) => r.status === 201)).toBe(true);
    for (const org of orgs) {
      const chain = await readChain(env.services.db, org.orgId);
      // policy.updated + 10 reviewed (1 event each) + 10 orphans (2 events each)
      expect(chain).toHaveLength(31);
      expect(chain.map((e) => e.seq)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
      expect(chainProblem(chain)).toBeNull();
      const head = await env.services.db.auditChainHead.findUniqueOrThrow({ where: { orgId: org.orgId } });
      expect(Number(head.seq)).toBe(31);
      expect(head.hash).toBe(chain.at(-1)!.hash);
    }
  });
});
