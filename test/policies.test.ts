import { describe, expect, it } from 'vitest';
import { readChain } from './support/audit-chain.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const createApproval = (body: Record<string, unknown>) =>
  org.request('post', '/v1/approvals').send({ action: 'refund', payload: {}, ...body });

describe('policy management', () => {
  it('stores a policy with defaults, reads, lists, replaces and deletes it', async () => {
    const put = await org
      .request('put', '/v1/policies/refunds')
      .send({ rules: [{ when: 'payload.amount <= 100', outcome: 'allow' }] })
      .expect(200);
    expect(put.body).toMatchObject({
      key: 'refunds',
      rules: [{ when: 'payload.amount <= 100', outcome: 'allow' }],
      defaultOutcome: 'review',
      timeoutSeconds: 3600,
      onTimeout: 'expire',
      escalateTo: null,
    });
    expect(await org.request('get', '/v1/policies/refunds').expect(200)).toHaveProperty('body', put.body);

    await org.request('put', '/v1/policies/managers').send({}).expect(200);
    const replaced = await org
      .request('put', '/v1/policies/refunds')
      .send({ defaultOutcome: 'allow', timeoutSeconds: 60, onTimeout: 'escalate', escalateTo: 'managers' })
      .expect(200);
    expect(replaced.body).toMatchObject({
      rules: [],
      defaultOutcome: 'allow',
      timeoutSeconds: 60,
      onTimeout: 'escalate',
      escalateTo: 'managers',
      createdAt: put.body.createdAt,
    });

    await org.request('put', '/v1/policies/another').send({}).expect(200);
    const list = await org.request('get', '/v1/policies').expect(200);
    expect(list.body.policies.map((p: { key: string }) => p.key)).toEqual(['another', 'managers', 'refunds']);

    await org.request('delete', '/v1/policies/refunds').expect(204);
    expect((await org.request('get', '/v1/policies/refunds')).body.code).toBe('not_found');
    await org.request('delete', '/v1/policies/refunds').expect(404);

    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.map((e) => e.type)).toEqual(['policy.updated', 'policy.updated', 'policy.updated', 'policy.updated', 'policy.deleted']);
    expect(chain[4]!.data).toEqual({ policyKey: 'refunds' });
  });

  it('keeps policies per organization', async () => {
    const other = await env.createOrg();
    await other.request('put', '/v1/policies/theirs').send({}).expect(200);
    await org.request('get', '/v1/policies/theirs').expect(404);
    await org.request('delete', '/v1/policies/theirs').expect(404);
    expect((await org.request('get', '/v1/policies').expect(200)).body.policies.map((p: { key: string }) => p.key)).not.toContain('theirs');
  });

  it.each([
    ['an expression that does not parse', { rules: [{ when: 'payload.amount <=', outcome: 'allow' }] }, 'rules.0.when'],
    [
      'an expression that does not type-check',
      {
        rules: [
          { when: 'true', outcome: 'allow' },
          { when: "1 + 'a' == 2", outcome: 'allow' },
        ],
      },
      'rules.1.when',
    ],
    ['an expression that cannot return a boolean', { rules: [{ when: '1 + 2', outcome: 'allow' }] }, 'rules.0.when'],
    ['an unknown variable', { rules: [{ when: 'user.admin', outcome: 'allow' }] }, 'rules.0.when'],
    ['an unknown outcome', { rules: [{ when: 'true', outcome: 'deny' }] }, 'rules.0.outcome'],
    ['a missing when', { rules: [{ outcome: 'allow' }] }, 'rules.0.when'],
    ['timeoutSeconds 0', { timeoutSeconds: 0 }, 'timeoutSeconds'],
    ['timeoutSeconds over 30 days', { timeoutSeconds: 2_592_001 }, 'timeoutSeconds'],
    ['a fractional timeout', { timeoutSeconds: 1.5 }, 'timeoutSeconds'],
    ['an unknown onTimeout', { onTimeout: 'explode' }, 'onTimeout'],
    ['an unknown defaultOutcome', { defaultOutcome: 'maybe' }, 'defaultOutcome'],
    ['an unknown field', { timeout: 5 }, 'timeout'],
    ['rules not an array', { rules: {} }, 'rules'],
  ])('answers 422 for %s, naming the field', async (_name, body, path) => {
    const res = await org.request('put', '/v1/policies/bad').send(body).expect(422);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    await org.request('get', '/v1/policies/bad').expect(404);
  });

  it('names the bad rule in the message', async () => {
    const res = await org
      .request('put', '/v1/policies/bad')
      .send({
        rules: [
          { when: 'true', outcome: 'allow' },
          { when: '(', outcome: 'allow' },
        ],
      })
      .expect(422);
    expect(res.body.detail).toMatch(/Rule 1/);
    expect(res.body.errors).toEqual([{ path: 'rules.1.when', message: expect.stringMatching(/^Rule 1 does not compile/) }]);
  });

  it('answers 422 for a key over 200 characters', async () => {
    await org
      .request('put', `/v1/policies/${'k'.repeat(201)}`)
      .send({})
      .expect(422);
  });
});

describe('escalateTo', () => {
  it('must name an existing policy: an unknown key is a 422 on escalateTo, and nothing is stored', async () => {
    const res = await org
      .request('put', '/v1/policies/first-line')
      .send({ onTimeout: 'escalate', escalateTo: 'managers-team' })
      .expect(422);
    expect(res.body.errors).toEqual([
      { path: 'escalateTo', message: expect.stringMatching(/^escalateTo must be the key of an existing policy/) },
    ]);
    expect(res.body.detail).toContain("'managers-team'");
    await org.request('get', '/v1/policies/first-line').expect(404);

    const other = await env.createOrg();
    await other.request('put', '/v1/policies/managers-team').send({}).expect(200);
    await org.request('put', '/v1/policies/first-line').send({ escalateTo: 'managers-team' }).expect(422);

    await org.request('put', '/v1/policies/managers-team').send({}).expect(200);
    await org.request('put', '/v1/policies/first-line').send({ onTimeout: 'escalate', escalateTo: 'managers-team' }).expect(200);
  });

  it('may name the policy itself, which can then be deleted', async () => {
    await org.request('put', '/v1/policies/ask-again').send({ onTimeout: 'escalate', escalateTo: 'ask-again' }).expect(200);
    await org.request('delete', '/v1/policies/ask-again').expect(204);
  });

  it('keeps its target: deleting a policy another escalates to is a 409 naming them, until they stop', async () => {
    await org.request('put', '/v1/policies/tier2').send({}).expect(200);
    await org.request('put', '/v1/policies/tier1-a').send({ escalateTo: 'tier2' }).expect(200);
    await org.request('put', '/v1/policies/tier1-b').send({ escalateTo: 'tier2' }).expect(200);

    const refused = await org.request('delete', '/v1/policies/tier2').expect(409);
    expect(refused.body).toMatchObject({ code: 'conflict', detail: expect.stringContaining("'tier1-a', 'tier1-b'") });
    await org.request('get', '/v1/policies/tier2').expect(200);
    const deletions = (await readChain(env.services.db, org.orgId)).filter((event) => event.type === 'policy.deleted');
    expect(deletions.map((event) => event.data.policyKey)).not.toContain('tier2');

    await org.request('put', '/v1/policies/tier1-a').send({}).expect(200);
    await org.request('delete', '/v1/policies/tier1-b').expect(204);
    await org.request('delete', '/v1/policies/tier2').expect(204);
  });

  it('a PUT naming a policy and a DELETE of it, raced, never both succeed', async () => {
    const rounds = 25;
    const outcomes = new Set<string>();
    for (let round = 0; round < rounds; round++) {
      const target = `target-${round}`;
      const source = `source-${round}`;
      await org.request('put', `/v1/policies/${target}`).send({}).expect(200);
      const [put, del] = await Promise.all([
        org.request('put', `/v1/policies/${source}`).send({ escalateTo: target }),
        org.request('delete', `/v1/policies/${target}`),
      ]);
      outcomes.add(`${put.status}/${del.status}`);
      const stored = await env.services.db.policy.findMany({ where: { orgId: org.orgId, key: { in: [source, target] } } });
      const keys = stored.map((policy) => policy.key).sort();
      if (put.status === 200) {
        expect(del.status).toBe(409);
        expect(keys).toEqual([source, target]);
      } else {
        expect([put.status, del.status]).toEqual([422, 204]);
        expect(keys).toEqual([]);
      }
    }
    // Which side wins is the scheduler's choice; both orders end in one of the two outcomes above.
    expect([...outcomes].every((outcome) => ['200/409', '422/204'].includes(outcome))).toBe(true);
  });
});

describe('policy evaluation', () => {
  it('takes the first rule that matches, in order', async () => {
    await org
      .request('put', '/v1/policies/ordered')
      .send({
        rules: [
          { when: 'payload.amount > 1000', outcome: 'review' },
          { when: 'payload.amount > 10', outcome: 'allow' },
        ],
        defaultOutcome: 'review',
      })
      .expect(200);
    expect((await createApproval({ policyKey: 'ordered', payload: { amount: 5000 } })).status).toBe(201);
    expect((await createApproval({ policyKey: 'ordered', payload: { amount: 50 } })).status).toBe(200);
    expect((await createApproval({ policyKey: 'ordered', payload: { amount: 5 } })).status).toBe(201);
  });

  it('reads action, agent and context', async () => {
    await org
      .request('put', '/v1/policies/vars')
      .send({
        rules: [
          { when: "action == 'read' && agent == 'trusted-bot'", outcome: 'allow' },
          { when: "context != null && context.ticket == 'OPS-1'", outcome: 'allow' },
        ],
      })
      .expect(200);
    expect((await createApproval({ action: 'read', agent: 'trusted-bot', policyKey: 'vars' })).status).toBe(200);
    expect((await createApproval({ action: 'read', agent: 'other-bot', policyKey: 'vars' })).status).toBe(201);
    expect((await createApproval({ action: 'read', policyKey: 'vars' })).status).toBe(201);
    expect((await createApproval({ action: 'write', context: { ticket: 'OPS-1' }, policyKey: 'vars' })).status).toBe(200);
  });

  it('compares JSON numbers with integer and double literals', async () => {
    await org
      .request('put', '/v1/policies/numbers')
      .send({ rules: [{ when: 'payload.amount <= 100 && payload.rate < 0.5', outcome: 'allow' }] })
      .expect(200);
    expect((await createApproval({ policyKey: 'numbers', payload: { amount: 99.5, rate: 0.25 } })).status).toBe(200);
    expect((await createApproval({ policyKey: 'numbers', payload: { amount: 100, rate: 0 } })).status).toBe(200);
    expect((await createApproval({ policyKey: 'numbers', payload: { amount: 100.5, rate: 0 } })).status).toBe(201);
    expect((await createApproval({ policyKey: 'numbers', payload: { amount: 1, rate: 0.5 } })).status).toBe(201);
  });

  it('fails closed to review when a rule errors at evaluation, and records the error', async () => {
    await org
      .request('put', '/v1/policies/fragile')
      .send({
        rules: [
          { when: 'payload.limit > 5', outcome: 'review' },
          { when: 'true', outcome: 'allow' },
        ],
      })
      .expect(200);
    const missingField = await createApproval({ policyKey: 'fragile', payload: {} }).expect(201);
    const wrongType = await createApproval({ policyKey: 'fragile', payload: { limit: 'many' } }).expect(201);
    expect(missingField.body.status).toBe('pending');
    const chain = await readChain(env.services.db, org.orgId);
    for (const id of [missingField.body.id, wrongType.body.id]) {
      const created = chain.find((e) => e.type === 'approval.created' && e.data.approvalId === id)!;
      // matchedRule names the rule that failed, as POST /v1/policies/:key/evaluate does (contract C12).
      expect(created.data).toMatchObject({
        outcome: 'review',
        matchedRule: 0,
        evaluationError: expect.stringMatching(/^rules\.0\.when/),
      });
    }
  });

  it('fails closed when a dyn expression returns something other than a boolean', async () => {
    await org
      .request('put', '/v1/policies/dyn')
      .send({ rules: [{ when: 'payload.flag', outcome: 'allow' }] })
      .expect(200);
    expect((await createApproval({ policyKey: 'dyn', payload: { flag: true } })).status).toBe(200);
    expect((await createApproval({ policyKey: 'dyn', payload: { flag: 'yes' } })).status).toBe(201);
  });

  it('applies a change made through another process at once, whatever this process read before', async () => {
    const peer = await env.createPeer();
    const viaPeer = (method: 'put' | 'delete', body?: object) => {
      const request = peer.http[method]('/v1/policies/shared').set('authorization', `Bearer ${org.key}`);
      return body ? request.send(body) : request;
    };
    const createHere = () => createApproval({ policyKey: 'shared' });

    expect((await createHere()).status).toBe(201); // no policy yet: an orphan, and this process remembers that
    await viaPeer('put', { defaultOutcome: 'allow' }).expect(200);
    expect((await createHere()).status).toBe(200);
    await viaPeer('put', { defaultOutcome: 'review', timeoutSeconds: 42 }).expect(200);
    const reviewed = await createHere().expect(201);
    expect((Date.parse(reviewed.body.expiresAt) - Date.parse(reviewed.body.createdAt)) / 1000).toBe(42);
    await viaPeer('delete').expect(204);
    const orphan = await createHere().expect(201);
    expect((Date.parse(orphan.body.expiresAt) - Date.parse(orphan.body.createdAt)) / 1000).toBe(env.config.ORPHAN_TIMEOUT_SECONDS);
  });

  it('applies a policy change to later requests; a pending request keeps its timeout', async () => {
    await org.request('put', '/v1/policies/changing').send({ timeoutSeconds: 100 }).expect(200);
    const before = await createApproval({ policyKey: 'changing' }).expect(201);
    await org.request('put', '/v1/policies/changing').send({ timeoutSeconds: 200 }).expect(200);
    const after = await createApproval({ policyKey: 'changing' }).expect(201);
    const timeoutOf = (view: { createdAt: string; expiresAt: string }) => (Date.parse(view.expiresAt) - Date.parse(view.createdAt)) / 1000;
    expect(timeoutOf(before.body)).toBe(100);
    expect(timeoutOf(after.body)).toBe(200);
    const reread = await org.request('get', `/v1/approvals/${before.body.id}`).expect(200);
    expect(timeoutOf(reread.body)).toBe(100);
  });
});
