import { describe, expect, it } from 'vitest';
import { chainProblem, expectedHash, readChain } from './support/audit-chain.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

describe('audit chain', () => {
  it('records every state change with actor, data and a hash an auditor can recompute', async () => {
    await org
      .request('put', '/v1/policies/p')
      .send({ rules: [{ when: 'payload.n < 10', outcome: 'allow' }] })
      .expect(200);
    const auto = await org
      .request('post', '/v1/approvals')
      .send({ action: 'päy "€" \n', payload: { n: 1, z: [1.5, 'ü'], a: null }, policyKey: 'p', agent: 'bot' })
      .expect(200);
    const pending = await org
      .request('post', '/v1/approvals')
      .send({ action: 'pay', payload: { n: 100 }, policyKey: 'p' })
      .expect(201);
    await org.asReviewer('post', `/v1/approvals/${pending.body.id}/decision`).send({ verdict: 'rejected', feedback: 'nö' }).expect(200);
    const orphan = await org.request('post', '/v1/approvals').send({ action: 'orphan', payload: {}, policyKey: 'missing' }).expect(201);
    await org.request('delete', '/v1/policies/p').expect(204);

    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.map((e) => e.type)).toEqual([
      'policy.updated',
      'approval.created',
      'approval.approved',
      'approval.created',
      'approval.rejected',
      'approval.created',
      'approval.orphaned',
      'policy.deleted',
    ]);
    expect(chainProblem(chain)).toBeNull();
    expect(chain[0]!.prevHash).toBe('0'.repeat(64));
    for (const event of chain) {
      expect(event.hash).toBe(expectedHash(event));
      // The rejection came from the reviewer's key (the key that asked may not decide); the rest from the agent's.
      expect(JSON.parse(event.actor)).toEqual({ type: 'api_key', id: event.type === 'approval.rejected' ? org.reviewerKeyId : org.keyId });
      expect(event.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(chain[1]!.data).toMatchObject({
      approvalId: auto.body.id,
      action: 'päy "€" \n',
      agent: 'bot',
      outcome: 'allow',
      matchedRule: 0,
    });
    expect(chain[2]!.data).toMatchObject({ approvalId: auto.body.id, verdict: 'approved', feedback: null });
    expect(chain[4]!.data).toMatchObject({ approvalId: pending.body.id, verdict: 'rejected', feedback: 'nö' });
    expect(chain[4]!.data).not.toHaveProperty('agent');
    expect(chain[6]!.data).toMatchObject({ approvalId: orphan.body.id, policyKey: 'missing' });
  });

  it('publishes every audit event as a domain event, in the same transaction, with a webhook body for the webhook types', async () => {
    const chain = await readChain(env.services.db, org.orgId);
    const outbox = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId }, orderBy: { id: 'asc' } });
    expect(outbox.map((row) => [Number(row.auditSeq), row.eventType])).toEqual(chain.map((e) => [e.seq, e.type]));
    const webhookTypes = ['approval.approved', 'approval.rejected', 'approval.expired', 'approval.escalated', 'approval.orphaned'];
    for (const row of outbox) {
      if (!webhookTypes.includes(row.eventType)) {
        expect(row.body).toBeNull();
        continue;
      }
      const body = row.body as Record<string, unknown>;
      expect(body).toMatchObject({ id: row.eventId, type: row.eventType, createdAt: expect.any(String) });
      expect(Object.keys(body.data as object).sort()).toEqual([
        'action',
        'agent',
        'approvalId',
        'decidedBy',
        'feedback',
        'payload',
        'payloadHash',
        'policyKey',
        'policyVersion',
        'receipt',
        'revision',
        'stage',
        'status',
        'verdict',
      ]);
    }
  });

  it('detects a changed event', async () => {
    const chain = await readChain(env.services.db, org.orgId);
    const tampered = chain.map((e) => (e.seq === 3 ? { ...e, data: { ...e.data, verdict: 'rejected' } } : e));
    expect(chainProblem(tampered)).toMatch(/^seq 3/);
  });
});
