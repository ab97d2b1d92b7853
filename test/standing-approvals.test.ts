import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChain } from './support/audit-chain.js';
import { createMember, type TestMember } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let other: TestOrg;
let alice: TestMember;
let bob: TestMember;
let carol: TestMember;
let dora: TestMember;

interface Approval {
  id: string;
  status: string;
  decidedBy: { type: string; id: string } | null;
  votes: { by: { id: string } }[];
}
interface Standing {
  id: string;
  active: boolean;
  expiresAt: string;
  revokedAt: string | null;
  fields: Record<string, unknown> | null;
}

beforeAll(async () => {
  env = await createTestEnv();
  [org, other] = await Promise.all([env.createOrg(), env.createOrg()]);
  [alice, bob, carol, dora] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'admin', 'carol@acme.test'),
    createMember(env, org, 'reviewer', 'dora@acme.test'),
  ]);
  for (const target of [org, other]) {
    await target
      .request('put', '/v1/policies/deploys')
      .send({ standingApproval: { maxSeconds: 3600 } })
      .expect(200);
  }
  await org
    .request('put', '/v1/policies/pairs')
    .send({ quorum: 2, standingApproval: { maxSeconds: 3600 } })
    .expect(200);
  await org.request('put', '/v1/policies/plain').send({}).expect(200);
});

afterAll(async () => {
  await env?.close();
});

type Requester = (method: 'post', path: string) => supertest.Test;

async function ask(payload: Record<string, unknown>, extra: Record<string, unknown> = {}, as: Requester = org.request) {
  const res = await as('post', '/v1/approvals').send({ action: 'deploy', payload, policyKey: 'deploys', agent: 'ship-bot', ...extra });
  expect([200, 201]).toContain(res.status);
  return res.body as Approval;
}

async function grant(member: TestMember, payload: Record<string, unknown>, standing: Record<string, unknown>, extra = {}) {
  const approval = await ask(payload, extra);
  expect(approval.status).toBe('pending');
  const res = await member.request('post', `/v1/approvals/${approval.id}/decision`).send({ verdict: 'approved', standing }).expect(200);
  expect(res.body.status).toBe('approved');
  const list = await member.request('get', '/v1/standing-approvals?active=true').expect(200);
  const granted = (list.body.standingApprovals as (Standing & { sourceApprovalId: string })[]).find(
    (s) => s.sourceApprovalId === approval.id,
  );
  expect(granted).toBeDefined();
  return granted!;
}

const auditData = async (approvalId: string, type: string) => {
  const events = await env.services.db.auditEvent.findMany({ where: { orgId: org.orgId, type } });
  return events.map((event) => JSON.parse(event.data) as Record<string, any>).filter((data) => data.approvalId === approvalId);
};

describe('standing approvals', () => {
  it('approve the same request again at its creation, as the member who granted them, audited by name', async () => {
    const payload = { service: 'api', version: '1.4.2' };
    const standing = await grant(alice, payload, { forSeconds: 600 });
    expect(standing.active).toBe(true);
    expect(Date.parse(standing.expiresAt) - Date.now()).toBeGreaterThan(590_000);

    const again = await org
      .request('post', '/v1/approvals')
      .send({ action: 'deploy', payload, policyKey: 'deploys', agent: 'ship-bot' })
      .expect(200);
    expect(again.body).toMatchObject({ status: 'approved', decidedBy: { type: 'user', id: alice.id } });
    expect(again.body.votes).toHaveLength(1);
    const [approved] = await auditData(again.body.id, 'approval.approved');
    expect(approved!.standingApproval).toEqual({ id: standing.id, grantedBy: { type: 'user', id: alice.id, email: alice.email } });
    const [source] = await auditData((standing as unknown as { sourceApprovalId: string }).sourceApprovalId, 'approval.approved');
    expect(source!.standingApprovalGranted).toMatchObject({ id: standing.id, fields: null });

    // Another payload is another request.
    expect((await ask({ service: 'api', version: '1.4.3' })).status).toBe('pending');
  });

  it('match only the fields the reviewer picked, when they picked some', async () => {
    const standing = await grant(
      bob,
      { service: 'search', version: '2.0.0', region: 'eu' },
      { forSeconds: 600, fields: ['service', 'region'] },
    );
    expect(standing.fields).toEqual({ service: 'search', region: 'eu' });
    expect((await ask({ service: 'search', version: '2.0.1', region: 'eu' })).status).toBe('approved');
    expect((await ask({ service: 'search', version: '2.0.1', region: 'us' })).status).toBe('pending');
    expect((await ask({ service: 'search', version: '2.0.1' })).status).toBe('pending');
  });

  it('never reach another organization, another principal, another agent, action or policy', async () => {
    const payload = { service: 'billing', version: '9' };
    const standing = await grant(alice, payload, { forSeconds: 600 });
    // The other organization has the same policy key and asks the same.
    expect((await ask(payload, {}, other.request)).status).toBe('pending');
    await other.request('post', `/v1/standing-approvals/${standing.id}/revoke`).expect(404);
    expect((await other.request('get', '/v1/standing-approvals').expect(200)).body.standingApprovals).toEqual([]);
    // Another key of the same organization is another principal.
    const otherKey = await env.createKey(org.orgId, ['approvals:write', 'approvals:read']);
    const asOtherKey: Requester = (method, path) => env.http[method](path).set('authorization', `Bearer ${otherKey.key}`);
    expect((await ask(payload, {}, asOtherKey)).status).toBe('pending');
    expect((await ask(payload, { agent: 'other-bot' })).status).toBe('pending');
    expect((await ask(payload, { action: 'rollback' })).status).toBe('pending');
    await org
      .request('put', '/v1/policies/deploys-b')
      .send({ standingApproval: { maxSeconds: 3600 } })
      .expect(200);
    expect((await ask(payload, { policyKey: 'deploys-b' })).status).toBe('pending');
    // Still the same request from the same key: approved.
    expect((await ask(payload)).status).toBe('approved');
  });

  it('approve nothing once expired or revoked; only the granter or an admin revokes', async () => {
    const payload = { service: 'mail', version: '3' };
    const expiring = await grant(alice, payload, { forSeconds: 60 });
    await env.services.db.standingApproval.update({ where: { id: expiring.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await ask(payload)).status).toBe('pending');
    await alice.request('post', `/v1/standing-approvals/${expiring.id}/revoke`).expect(409);

    const revocable = await grant(alice, payload, { forSeconds: 600 });
    const refused = await bob.request('post', `/v1/standing-approvals/${revocable.id}/revoke`).expect(403);
    expect(refused.body.detail).toContain('alice@acme.test');
    // An agent key may not revoke (it lacks approvals:decide), and a reviewer key owned by nobody is not the granter.
    await org.request('post', `/v1/standing-approvals/${revocable.id}/revoke`).expect(403);
    await org.asReviewer('post', `/v1/standing-approvals/${revocable.id}/revoke`).expect(403);
    expect((await ask(payload)).status).toBe('approved');
    const revoked = await alice.request('post', `/v1/standing-approvals/${revocable.id}/revoke`).expect(200);
    expect(revoked.body).toMatchObject({ active: false, revokedBy: { type: 'user', id: alice.id } });
    expect((await ask(payload)).status).toBe('pending');
    await alice.request('post', `/v1/standing-approvals/${revocable.id}/revoke`).expect(409);
    const revocations = await env.services.db.auditEvent.findMany({ where: { orgId: org.orgId, type: 'standing_approval.revoked' } });
    expect(revocations.map((event) => JSON.parse(event.data))).toEqual([
      {
        standingApprovalId: revocable.id,
        policyKey: 'deploys',
        action: 'deploy',
        agent: 'ship-bot',
        grantedBy: { type: 'user', id: alice.id, email: alice.email },
      },
    ]);
    expect(JSON.parse(revocations[0]!.actor)).toMatchObject({ type: 'user', id: alice.id });

    const byAdmin = await grant(bob, { service: 'cdn' }, { forSeconds: 600 });
    await carol.request('post', `/v1/standing-approvals/${byAdmin.id}/revoke`).expect(200);
    const inactive = await carol.request('get', '/v1/standing-approvals?active=false').expect(200);
    expect(inactive.body.standingApprovals.map((s: Standing) => s.id)).toEqual(
      expect.arrayContaining([byAdmin.id, revocable.id, expiring.id]),
    );
  });

  it('never decide what the member who granted it may not decide now', async () => {
    const payload = { service: 'queue', version: '5' };
    await grant(dora, payload, { forSeconds: 600 });
    // On behalf of Dora herself: self-approval, which the policy does not allow.
    expect((await ask(payload, { onBehalfOf: dora.email })).status).toBe('pending');
    // Demoted to viewer: she decides nothing, so her standing approval approves nothing.
    await org.request('patch', `/v1/members/${dora.id}`).send({ role: 'viewer' }).expect(200);
    expect((await ask(payload)).status).toBe('pending');
  });

  it('are refused where they would stand in for more than the policy lets one reviewer do', async () => {
    const refusal = async (body: Record<string, unknown>, extra: Record<string, unknown> = {}, as = alice.request) => {
      const approval = await ask({ service: 'refused', at: Math.random() }, extra);
      const res = await as('post', `/v1/approvals/${approval.id}/decision`).send(body).expect(422);
      // Nothing was voted: the request still waits.
      expect((await org.request('get', `/v1/approvals/${approval.id}`).expect(200)).body).toMatchObject({ status: 'pending', votes: [] });
      return res.body.errors as { path: string; message: string }[];
    };
    const quorum = await refusal({ verdict: 'approved', standing: { forSeconds: 600 } }, { policyKey: 'pairs' });
    expect(quorum).toEqual([{ path: 'standing', message: expect.stringContaining('needs 2 approvals') }]);
    expect(await refusal({ verdict: 'approved', standing: { forSeconds: 600 } }, { policyKey: 'plain' })).toEqual([
      { path: 'standing', message: "The policy 'plain' does not allow standing approvals." },
    ]);
    expect(await refusal({ verdict: 'approved', standing: { forSeconds: 7200 } })).toEqual([
      { path: 'standing.forSeconds', message: expect.stringContaining('at most 3600 seconds') },
    ]);
    expect(await refusal({ verdict: 'approved', standing: { forSeconds: 600, fields: ['nope'] } })).toEqual([
      { path: 'standing.fields', message: "The payload has no field 'nope'." },
    ]);
    expect((await refusal({ verdict: 'rejected', standing: { forSeconds: 600 } })).map((e) => e.path)).toEqual(['standing']);
    expect((await refusal({ verdict: 'approved', standing: { forSeconds: 5 } })).map((e) => e.path)).toEqual(['standing.forSeconds']);
    expect(
      (await refusal({ verdict: 'approved', standing: { forSeconds: 600 } }, {}, org.asReviewer as typeof alice.request)).map(
        (e) => e.message,
      ),
    ).toEqual(['A standing approval is granted by a member, in the console: an API key cannot grant one.']);
    await org
      .request('put', '/v1/policies/bad')
      .send({ standingApproval: { maxSeconds: 100_000 } })
      .expect(422);
  });

  it('approve each of many concurrent identical requests once, and none that a revocation has answered before', async () => {
    const payload = { service: 'race', version: '1' };
    const standing = await grant(bob, payload, { forSeconds: 600 });
    const burst = await Promise.all(Array.from({ length: 20 }, () => ask(payload)));
    expect(burst.map((approval) => approval.status)).toEqual(Array(20).fill('approved'));
    expect(burst.every((approval) => approval.votes.length === 1 && approval.votes[0]!.by.id === bob.id)).toBe(true);

    // Creations racing the revocation: each is approved or pending, and none is approved after it.
    const racing = Array.from({ length: 20 }, () => ask(payload));
    const revoked = await bob.request('post', `/v1/standing-approvals/${standing.id}/revoke`).expect(200);
    const raced = await Promise.all(racing);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    // The chain orders commits (each takes its head): every approval by the grant comes before its revocation.
    // Timestamps would not: a creation stamps its decision before it waits for the grant's lock.
    const chain = await readChain(env.services.db, org.orgId);
    const revocation = chain.find((event) => event.type === 'standing_approval.revoked' && event.data.standingApprovalId === standing.id)!;
    for (const approval of raced) {
      expect(['approved', 'pending']).toContain(approval.status);
      if (approval.status === 'approved') {
        const approvedEvent = chain.find((event) => event.type === 'approval.approved' && event.data.approvalId === approval.id)!;
        expect(approvedEvent.seq).toBeLessThan(revocation.seq);
      }
    }
    const after = await Promise.all(Array.from({ length: 5 }, () => ask(payload)));
    expect(after.map((approval) => approval.status)).toEqual(Array(5).fill('pending'));
  });
});
