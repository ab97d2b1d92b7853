import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChain } from './support/audit-chain.js';
import { createMember, type TestMember } from './support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let alice: TestMember;
let bob: TestMember;
let dave: TestMember;
let vic: TestMember;

const hours = (count: number) => new Date(Date.now() + count * 3600_000).toISOString();

beforeAll(async () => {
  env = await createTestEnv();
  org = await env.createOrg();
  [alice, bob, dave, vic] = await Promise.all([
    createMember(env, org, 'reviewer', 'alice@acme.test'),
    createMember(env, org, 'reviewer', 'bob@acme.test'),
    createMember(env, org, 'reviewer', 'dave@acme.test'),
    createMember(env, org, 'viewer', 'vic@acme.test'),
  ]);
  // Only Alice decides these; Dave is a reviewer, but not one the policy names.
  await org
    .request('put', '/v1/policies/alice-only')
    .send({ reviewers: { roles: [], members: [alice.email] } })
    .expect(200);
  await org
    .request('put', '/v1/policies/alice-and-bob')
    .send({ reviewers: { roles: [], members: [alice.email, bob.email] }, quorum: 2 })
    .expect(200);
}, 120_000);

afterAll(async () => {
  await env?.close();
});

async function pending(policyKey: string, extra: Record<string, unknown> = {}, at: TestOrg = org): Promise<string> {
  const res = await at
    .request('post', '/v1/approvals')
    .send({ action: 'pay', payload: { amount: 10 }, policyKey, ...extra })
    .expect(201);
  return res.body.id as string;
}

const decide = (member: TestMember, id: string, verdict = 'approved') =>
  member.request('post', `/v1/approvals/${id}/decision`).send({ verdict });

const delegate = (member: TestMember, delegation: Record<string, unknown>) =>
  member.request('put', '/v1/members/me/delegation').send(delegation);

describe('a delegate decides in the place of a member who is away', () => {
  it('decides only while the delegation runs, and only what the member could, as themself', async () => {
    const before = await pending('alice-only');
    expect((await decide(dave, before)).body.code).toBe('not_a_reviewer');

    const set = await delegate(alice, { delegateId: dave.id, endsAt: hours(24) }).expect(200);
    expect(set.body.delegation).toEqual({ delegateId: dave.id, startsAt: null, endsAt: expect.stringMatching(/Z$/) });
    // Dave now sees it among what he may decide, and decides it; the vote is his.
    const decidable = await dave.request('get', '/v1/approvals?decidable=true').expect(200);
    expect(decidable.body.approvals.map((approval: { id: string }) => approval.id)).toContain(before);
    const decided = (await decide(dave, before).expect(200)).body;
    expect(decided).toMatchObject({ status: 'approved' });
    // The vote is Dave's, on behalf of Alice: in the view, and in the audit event.
    const standingIn = [{ id: alice.id, email: alice.email }];
    expect(decided.votes).toEqual([
      expect.objectContaining({ by: { type: 'user', id: dave.id, email: dave.email, onBehalfOf: standingIn } }),
    ]);
    const chain = await readChain(env.services.db, org.orgId);
    const approved = chain.find((event) => event.type === 'approval.approved' && event.data.approvalId === before)!;
    expect(JSON.parse(approved.actor)).toMatchObject({ type: 'user', id: dave.id });
    expect(approved.data.onBehalfOf).toEqual(standingIn);

    // Not on another policy Alice is not named by, and not on a request made on Alice's behalf.
    await org
      .request('put', '/v1/policies/bob-only')
      .send({ reviewers: { roles: [], members: [bob.email] } })
      .expect(200);
    expect((await decide(dave, await pending('bob-only')).expect(403)).body.code).toBe('not_a_reviewer');
    const forAlice = await pending('alice-and-bob', { onBehalfOf: alice.email });
    expect((await decide(dave, forAlice).expect(403)).body.code).toBe('not_a_reviewer');

    // A delegation that starts tomorrow lets nobody in today; one ended lets nobody in at all.
    await delegate(alice, { delegateId: dave.id, startsAt: hours(24), endsAt: hours(48) }).expect(200);
    expect((await decide(dave, await pending('alice-only')).expect(403)).body.code).toBe('not_a_reviewer');
    const ended = await alice.request('delete', '/v1/members/me/delegation').expect(200);
    expect(ended.body.delegation).toBeNull();
    expect((await decide(dave, await pending('alice-only')).expect(403)).body.code).toBe('not_a_reviewer');
  });

  it('runs out by itself at endsAt', async () => {
    const id = await pending('alice-only');
    await delegate(alice, { delegateId: dave.id, endsAt: new Date(Date.now() + 1_500).toISOString() }).expect(200);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await decide(dave, id).expect(403)).body.code).toBe('not_a_reviewer');
    const me = await org.request('get', '/v1/members').expect(200);
    expect(me.body.members.find((member: { id: string }) => member.id === alice.id).delegation).toBeNull();
  });

  it('keeps four eyes: a delegate who is also a reviewer votes once, as one person, however many requests race', async () => {
    await delegate(alice, { delegateId: bob.id, endsAt: hours(1) }).expect(200);
    const id = await pending('alice-and-bob');
    const answers = await Promise.all(Array.from({ length: 12 }, () => decide(bob, id)));
    expect(answers.map((res) => res.status).sort()).toEqual([200, ...Array<number>(11).fill(409)]);
    // Bob is a reviewer in his own right and stands in for Alice too: one vote, which says both.
    const view = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(view.votes.map((vote: { by: unknown }) => vote.by)).toEqual([
      { type: 'user', id: bob.id, email: bob.email, onBehalfOf: [{ id: alice.id, email: alice.email }] },
    ]);
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body.status).toBe('pending');
    await alice.request('delete', '/v1/members/me/delegation').expect(200);
  });

  it('decides nothing once the delegate is made a viewer, while the delegation still runs: neither in a session nor with a key', async () => {
    const other = await env.createOrg();
    // The stand-in is an admin the policy does not name, so that it may make a key of its own.
    const [away, standIn] = await Promise.all([
      createMember(env, other, 'reviewer'),
      createMember(env, other, 'admin'),
      createMember(env, other, 'admin'), // so that the stand-in is not the last admin
    ]);
    await other
      .request('put', '/v1/policies/away-only')
      .send({ reviewers: { roles: [], members: [away.email] } })
      .expect(200);
    await delegate(away, { delegateId: standIn.id, endsAt: hours(24) }).expect(200);
    const minted = await standIn
      .request('post', '/v1/keys')
      .send({ scopes: ['approvals:decide'] })
      .expect(201);
    const byKey = (id: string) =>
      env.http.post(`/v1/approvals/${id}/decision`).set('authorization', `Bearer ${minted.body.secret}`).send({ verdict: 'approved' });
    await byKey(await pending('away-only', {}, other)).expect(200);
    await decide(standIn, await pending('away-only', {}, other)).expect(200);

    await other.request('patch', `/v1/members/${standIn.id}`).send({ role: 'viewer' }).expect(200);
    const id = await pending('away-only', {}, other);
    await byKey(id).expect(401);
    expect((await decide(standIn, id).expect(403)).body.code).toBe('forbidden');
    expect((await other.request('get', `/v1/approvals/${id}`).expect(200)).body.status).toBe('pending');
  });

  it('is among the members told of a request (mail, push, reminders), as the member is', async () => {
    await delegate(alice, { delegateId: dave.id, endsAt: hours(1) }).expect(200);
    const id = await pending('alice-only');
    const told = await env.services.notifications.entitledMembers(org.orgId, id, 'email');
    expect(told.map((member) => member.email).sort()).toEqual([alice.email, dave.email]);
    await alice.request('delete', '/v1/members/me/delegation').expect(200);
  });
});

describe('setting a delegation', () => {
  it('is audited, and an admin may set or end one for a member', async () => {
    const set = await org
      .request('put', `/v1/members/${alice.id}/delegation`)
      .send({ delegateId: bob.id, endsAt: hours(2) })
      .expect(200);
    expect(set.body.delegation.delegateId).toBe(bob.id);
    await org.request('delete', `/v1/members/${alice.id}/delegation`).expect(200);
    const chain = await readChain(env.services.db, org.orgId);
    const changes = chain.filter((event) => event.type === 'member.updated' && 'delegation' in event.data).map((event) => event.data);
    expect(changes.at(-2)).toMatchObject({ memberId: alice.id, delegation: { delegateId: bob.id, delegateEmail: bob.email } });
    expect(changes.at(-1)).toMatchObject({ memberId: alice.id, delegation: null });
  });

  it('refuses, naming the field, a viewer on either side, oneself, a stranger, and a period not ahead or too long', async () => {
    const other = await env.createOrg();
    const stranger = await createMember(env, other, 'reviewer');
    const cases: [TestMember, Record<string, unknown>, string, RegExp][] = [
      [vic, { delegateId: dave.id, endsAt: hours(1) }, 'delegateId', /A viewer decides nothing/],
      [alice, { delegateId: vic.id, endsAt: hours(1) }, 'delegateId', /A viewer cannot decide/],
      [alice, { delegateId: alice.id, endsAt: hours(1) }, 'delegateId', /their own delegate/],
      [alice, { delegateId: stranger.id, endsAt: hours(1) }, 'delegateId', /not a member of this organization/],
      [alice, { delegateId: dave.id, endsAt: hours(-1) }, 'endsAt', /in the future/],
      [alice, { delegateId: dave.id, startsAt: hours(5), endsAt: hours(4) }, 'endsAt', /after startsAt/],
      [alice, { delegateId: dave.id, endsAt: hours(366 * 24) }, 'endsAt', /at most 365 days/],
      [alice, { delegateId: 'dave', endsAt: 'tomorrow' }, 'delegateId', /uuid|UUID/],
    ];
    for (const [member, body, path, message] of cases) {
      const res = await delegate(member, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.errors).toContainEqual({ path, message: expect.stringMatching(message) });
    }
    expect(
      (await org.request('get', '/v1/members').expect(200)).body.members.every(
        (member: { delegation: unknown }) => member.delegation === null,
      ),
    ).toBe(true);
  });

  it("refuses another member's delegation without members:write, a session without its CSRF token, and a key for `me`", async () => {
    await alice
      .request('put', `/v1/members/${bob.id}/delegation`)
      .send({ delegateId: dave.id, endsAt: hours(1) })
      .expect(403);
    await alice.agent
      .put('/v1/members/me/delegation')
      .send({ delegateId: dave.id, endsAt: hours(1) })
      .expect(403);
    const byKey = await org.request('put', '/v1/members/me/delegation').send({ delegateId: dave.id, endsAt: hours(1) });
    expect([401, 403]).toContain(byKey.status);
    await org
      .request('put', `/v1/members/${crypto.randomUUID()}/delegation`)
      .send({ delegateId: dave.id, endsAt: hours(1) })
      .expect(404);
    const members = (await org.request('get', '/v1/members').expect(200)).body.members as { delegation: unknown }[];
    expect(members.every((member) => member.delegation === null)).toBe(true);
  });
});
