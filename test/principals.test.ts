import { beforeAll, describe, expect, it } from 'vitest';
import { principalKey, type Scope } from '../src/modules/orgs/tenant.js';
import { readChain } from './support/audit-chain.js';
import { confirmLink } from './support/decision-links.js';
import { createMember, type TestMember } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

beforeAll(async () => {
  await org.request('put', '/v1/policies/two-eyes').send({ quorum: 2 }).expect(200);
  await org.request('put', '/v1/policies/default').send({}).expect(200);
});

interface MintedKey {
  id: string;
  secret: string;
  owner: { type: string; id: string } | null;
  /** A request with this key in the authorization header. */
  request: TestOrg['request'];
}

/** A key made with POST /v1/keys by whoever `as` sends the request. */
async function mint(as: (method: 'post', path: string) => ReturnType<TestEnv['http']['post']>, scopes: Scope[]): Promise<MintedKey> {
  const created = await as('post', '/v1/keys').send({ scopes }).expect(201);
  const secret = created.body.secret as string;
  return {
    id: created.body.key.id,
    secret,
    owner: created.body.key.owner,
    request: (method, path) => env.http[method](path).set('authorization', `Bearer ${secret}`),
  };
}

/** A key made by the CLI (OrgService.createApiKey): a service key. */
async function serviceKey(scopes: Scope[]): Promise<MintedKey> {
  const { id, key } = await env.createKey(org.orgId, scopes);
  return { id, secret: key, owner: null, request: (method, path) => env.http[method](path).set('authorization', `Bearer ${key}`) };
}

async function requestApproval(policyKey: string, extra: Record<string, unknown> = {}, as = org.request) {
  const created = await as('post', '/v1/approvals')
    .send({ action: 'pay', payload: { amount: 5000 }, policyKey, ...extra })
    .expect(201);
  return created.body as { id: string; expiresAt: string };
}

const decision = { verdict: 'approved' };

describe('every key has an owner', () => {
  it('names a caller’s principal in TypeScript (principalKey) as the database does (ag_principal_key)', async () => {
    const admin = await createMember(env, org, 'admin');
    const bySession = await mint(admin.request, ['approvals:read', 'keys:write']);
    const service = await serviceKey(['approvals:read', 'keys:write']);
    const byService = await mint(service.request, ['approvals:read', 'keys:write']);
    const byServiceChild = await mint(byService.request, ['approvals:read']);
    for (const key of [bySession, service, byService, byServiceChild]) {
      const tenant = (await env.services.orgs.authenticate(key.secret))!;
      const [row] = await env.services.sql.query<{ key: string }>(null, 'SELECT ag_principal_key($1::jsonb) AS key', [
        JSON.stringify({ type: 'api_key', id: key.id }),
      ]);
      expect(principalKey(tenant.principal)).toBe(row!.key);
    }
    const signedIn = await env.http.post('/v1/session').send({ email: admin.email, password: admin.password }).expect(200);
    const token = (signedIn.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!.split('=')[1]!;
    const session = (await env.services.members.authenticateSession(token))!;
    expect(principalKey(session.principal)).toBe(`user:${admin.id}`);
  });

  it('ag_principal_of resolves each kind of key: a member’s with their email and role now, a service key’s child to the service key, an unknown key to itself', async () => {
    const admin = await createMember(env, org, 'admin');
    const bySession = await mint(admin.request, ['approvals:read', 'keys:write']);
    const service = await serviceKey(['approvals:read', 'keys:write']);
    const byService = await mint(service.request, ['approvals:read']);
    // null as SQL's NULL, not JSON's.
    const principalOf = async (actor: object | null) =>
      (
        await env.services.sql.query<{ principal: unknown }>(null, 'SELECT ag_principal_of($1::jsonb) AS principal', [
          actor && JSON.stringify(actor),
        ])
      )[0]!.principal;
    const key = (id: string) => ({ type: 'api_key', id });
    expect(await principalOf(key(bySession.id))).toEqual({ type: 'user', id: admin.id, email: admin.email, role: 'admin' });
    expect(await principalOf(key(service.id))).toEqual(key(service.id));
    expect(await principalOf(key(byService.id))).toEqual(key(service.id));
    const nobodys = crypto.randomUUID();
    expect(await principalOf(key(nobodys))).toEqual(key(nobodys));
    const member = { type: 'user', id: admin.id, email: admin.email };
    expect(await principalOf(member)).toEqual(member);
    expect(await principalOf(null)).toBeNull();

    await org.request('patch', `/v1/members/${admin.id}`).send({ role: 'reviewer' }).expect(200);
    expect(await principalOf(key(bySession.id))).toMatchObject({ type: 'user', id: admin.id, role: 'reviewer' });
  });

  it('a CLI key is its own principal; a key made in a session is the member’s; one made by a key is that key’s principal', async () => {
    const admin = await createMember(env, org, 'admin');
    const listed = async () =>
      new Map(
        ((await org.request('get', '/v1/keys').expect(200)).body.keys as { id: string; owner: unknown }[]).map((key) => [
          key.id,
          key.owner,
        ]),
      );
    expect((await listed()).get(org.keyId)).toBeNull();

    const bySession = await mint(admin.request, ['approvals:read', 'keys:write']);
    expect(bySession.owner).toEqual({ type: 'user', id: admin.id });
    // A key made by a member's key belongs to the member, not to the key that made it.
    const byOwnedKey = await mint(bySession.request, ['approvals:read']);
    expect(byOwnedKey.owner).toEqual({ type: 'user', id: admin.id });

    const service = await serviceKey(['approvals:read', 'keys:write']);
    const byService = await mint(service.request, ['approvals:read', 'keys:write']);
    expect(byService.owner).toEqual({ type: 'key', id: service.id });
    // Flattened: a key made by that key belongs to the service key too.
    const byServiceChild = await mint(byService.request, ['approvals:read']);
    expect(byServiceChild.owner).toEqual({ type: 'key', id: service.id });

    const owners = await listed();
    expect(owners.get(bySession.id)).toEqual({ type: 'user', id: admin.id });
    expect(owners.get(byServiceChild.id)).toEqual({ type: 'key', id: service.id });
    expect(owners.get(service.id)).toBeNull();

    // Each creation is audited with its maker as the actor: what gives keys made before owners existed theirs.
    const created = (await readChain(env.services.db, org.orgId)).filter((event) => event.type === 'key.created');
    const makerOf = new Map(created.map((event) => [event.data.keyId, JSON.parse(event.actor)]));
    expect(makerOf.get(bySession.id)).toEqual({ type: 'user', id: admin.id });
    expect(makerOf.get(byOwnedKey.id)).toEqual({ type: 'api_key', id: bySession.id });
    expect(makerOf.get(byServiceChild.id)).toEqual({ type: 'api_key', id: byService.id });
    expect(created.find((event) => event.data.keyId === bySession.id)!.data).toMatchObject({
      scopes: ['approvals:read', 'keys:write'],
      owner: { type: 'user', id: admin.id },
    });
  });
});

describe('the voter is the principal, not the credential', () => {
  let admin: TestMember;
  let reviewer: TestMember;
  beforeAll(async () => {
    [admin, reviewer] = await Promise.all([createMember(env, org, 'admin'), createMember(env, org, 'reviewer')]);
  });

  it('an admin who voted in the console cannot reach a quorum of two with a key they minted: 409, still pending', async () => {
    const { id } = await requestApproval('two-eyes');
    const minted = await mint(admin.request, ['approvals:decide', 'approvals:read']);
    await admin.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
    const again = await minted.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(409);
    expect(again.body.detail).toContain('already voted');
    const after = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(after).toMatchObject({ status: 'pending', decidedBy: null });
    expect(after.votes).toHaveLength(1);
    // Another person completes it.
    await reviewer.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
  });

  it('the other way round: a key’s vote first, then the console and a decision link of the same member are 409', async () => {
    const { id, expiresAt } = await requestApproval('two-eyes');
    const minted = await mint(admin.request, ['approvals:decide']);
    await minted.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
    await admin.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(409);
    const links = await env.services.decisionLinks.issue(org.orgId, { id, expiresAt, revision: 1 }, admin.id);
    const confirmed = await confirmLink(env, links.approve);
    expect(confirmed.status).toBe(409);
    expect(confirmed.text).toContain('You voted on this request already');
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body).toMatchObject({ status: 'pending' });
  });

  it('many concurrent votes by one principal through several credentials: exactly one is recorded, the rest 409', async () => {
    const member = await createMember(env, org, 'admin');
    const keys = await Promise.all(Array.from({ length: 4 }, () => mint(member.request, ['approvals:decide'])));
    for (let round = 0; round < 3; round++) {
      const { id } = await requestApproval('two-eyes');
      const votes = [
        ...Array.from({ length: 4 }, () => member.request('post', `/v1/approvals/${id}/decision`).send(decision)),
        ...keys.flatMap((key) => [0, 1, 2].map(() => key.request('post', `/v1/approvals/${id}/decision`).send(decision))),
      ];
      const statuses = (await Promise.all(votes)).map((res) => res.status).sort();
      expect(statuses).toEqual([200, ...Array(15).fill(409)]);
      const stored = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
      expect(stored.status).toBe('pending');
      expect(stored.votes).toHaveLength(1);
    }
  });

  it('a service key and the keys it made are one voter', async () => {
    const service = await serviceKey(['approvals:decide', 'keys:write']);
    const child = await mint(service.request, ['approvals:decide']);
    const { id } = await requestApproval('two-eyes');
    await child.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
    await service.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(409);
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
  });

  it('votes[].by and decidedBy name the key and its owner', async () => {
    const minted = await mint(admin.request, ['approvals:decide']);
    const service = await serviceKey(['approvals:decide', 'keys:write']);
    const child = await mint(service.request, ['approvals:decide']);
    const { id } = await requestApproval('two-eyes');
    await minted.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
    const settled = (await child.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(200)).body;
    const byAdmin = { type: 'api_key', id: minted.id, owner: { type: 'user', id: admin.id } };
    const byService = { type: 'api_key', id: child.id, owner: { type: 'key', id: service.id } };
    expect(settled.votes.map((vote: { by: unknown }) => vote.by)).toEqual([byAdmin, byService]);
    expect(settled.decidedBy).toEqual(byService);
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body.decidedBy).toEqual(byService);
    const webhook = await env.services.db.outboxMessage.findFirst({
      where: { orgId: org.orgId, eventType: 'approval.approved' },
      orderBy: { id: 'desc' },
    });
    expect((webhook!.body as { data: { decidedBy: unknown } }).data.decidedBy).toEqual(byService);
    // A service key's own vote has no owner to name.
    const other = await requestApproval('default');
    const bySelf = (await org.asReviewer('post', `/v1/approvals/${other.id}/decision`).send(decision).expect(200)).body;
    expect(bySelf.decidedBy).toEqual({ type: 'api_key', id: org.reviewerKeyId });
  });

  it('a member’s key decides as the member: a policy that does not name them refuses it', async () => {
    await org
      .request('put', '/v1/policies/reviewers-only')
      .send({ reviewers: { roles: ['reviewer'] } })
      .expect(200);
    const minted = await mint(admin.request, ['approvals:decide', 'approvals:read']);
    const { id } = await requestApproval('reviewers-only');
    expect((await minted.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(403)).body.code).toBe('not_a_reviewer');
    const inbox = (await minted.request('get', '/v1/approvals?decidable=true&limit=200').expect(200)).body.approvals as { id: string }[];
    expect(inbox.map((approval) => approval.id)).not.toContain(id);
  });
});

describe('self-approval is judged on principals', () => {
  it('with onBehalfOf the admin, a key the admin minted is refused self_approval', async () => {
    const admin = await createMember(env, org, 'admin');
    const minted = await mint(admin.request, ['approvals:decide', 'approvals:read']);
    const { id } = await requestApproval('default', { onBehalfOf: admin.email.toUpperCase() });
    const refused = await minted.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(403);
    expect(refused.body).toMatchObject({ status: 403, code: 'self_approval' });
    const inbox = (await minted.request('get', '/v1/approvals?decidable=true&limit=200').expect(200)).body.approvals as { id: string }[];
    expect(inbox.map((approval) => approval.id)).not.toContain(id);
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body.status).toBe('pending');
  });

  it('a key minted by the creating service key (or by its child) cannot approve what that service key created', async () => {
    const agent = await serviceKey(['approvals:write', 'approvals:decide', 'keys:write']);
    const child = await mint(agent.request, ['approvals:decide', 'keys:write']);
    const grandchild = await mint(child.request, ['approvals:decide']);
    const { id } = await requestApproval('default', {}, agent.request);
    for (const key of [child, grandchild]) {
      expect((await key.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(403)).body.code).toBe('self_approval');
    }
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
  });

  it('what a member’s key created, the member may not decide in the console, nor with another key', async () => {
    const admin = await createMember(env, org, 'admin');
    const creator = await mint(admin.request, ['approvals:write']);
    const other = await mint(admin.request, ['approvals:decide']);
    const { id } = await requestApproval('default', {}, creator.request);
    expect((await admin.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(403)).body.code).toBe('self_approval');
    expect((await other.request('post', `/v1/approvals/${id}/decision`).send(decision).expect(403)).body.code).toBe('self_approval');
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send(decision).expect(200);
  });
});

describe('granting is bounded by what the granter holds', () => {
  it('a key with members:write alone cannot make an admin, nor a reviewer; 404 for another organization’s member first', async () => {
    const membersOnly = await serviceKey(['members:write']);
    const created = await membersOnly.request('post', '/v1/members').send({ email: 'escalate@acme.test', role: 'admin' }).expect(403);
    expect(created.body).toMatchObject({ status: 403, code: 'forbidden', detail: expect.stringContaining('keys:write') });
    await membersOnly.request('post', '/v1/members').send({ email: 'escalate@acme.test', role: 'reviewer' }).expect(403);
    await membersOnly.request('post', '/v1/members').send({ email: 'escalate@acme.test', role: 'viewer' }).expect(403);
    expect((await org.request('get', '/v1/members').expect(200)).body.members.map((m: { email: string }) => m.email)).not.toContain(
      'escalate@acme.test',
    );

    const viewer = await createMember(env, org, 'viewer');
    const patched = await membersOnly.request('patch', `/v1/members/${viewer.id}`).send({ role: 'admin' }).expect(403);
    expect(patched.body.code).toBe('forbidden');
    await membersOnly.request('patch', `/v1/members/${viewer.id}`).send({ role: 'reviewer' }).expect(403);
    // Renaming grants nothing.
    await membersOnly.request('patch', `/v1/members/${viewer.id}`).send({ name: 'Renamed' }).expect(200);
    expect((await viewer.request('get', '/v1/session').expect(200)).body.member.role).toBe('viewer');

    const other = await env.createOrg();
    const stranger = await createMember(env, other, 'viewer');
    await membersOnly.request('patch', `/v1/members/${stranger.id}`).send({ role: 'admin' }).expect(404);
  });

  it('a key holding every scope of a role may grant that role, and no more', async () => {
    const reviewerScopes: Scope[] = [
      'members:write',
      'approvals:read',
      'approvals:decide',
      'audit:read',
      'policies:read',
      'webhooks:read',
      'members:read',
    ];
    const granter = await serviceKey(reviewerScopes);
    await granter.request('post', '/v1/members').send({ email: 'new-reviewer@acme.test', role: 'reviewer' }).expect(201);
    const viewer = await createMember(env, org, 'viewer');
    await granter.request('patch', `/v1/members/${viewer.id}`).send({ role: 'reviewer' }).expect(200);
    await granter.request('patch', `/v1/members/${viewer.id}`).send({ role: 'admin' }).expect(403);
    await granter.request('post', '/v1/members').send({ email: 'new-admin@acme.test', role: 'admin' }).expect(403);
  });

  it('a bad body is still 422, and no members:write still 403 before it', async () => {
    const membersOnly = await serviceKey(['members:write']);
    await membersOnly.request('post', '/v1/members').send({ email: 'not-an-email', role: 'admin' }).expect(422);
    const readOnly = await serviceKey(['members:read']);
    await readOnly.request('post', '/v1/members').send({ email: 'not-an-email', role: 'admin' }).expect(403);
  });
});

describe('keys follow the member who owns them', () => {
  it('removing an admin revokes every key they own at once, each audited as key.revoked', async () => {
    const admin = await createMember(env, org, 'admin');
    const [reader, writer] = await Promise.all([
      mint(admin.request, ['audit:read']),
      mint(admin.request, ['keys:write', 'approvals:read']),
    ]);
    const grandchild = await mint(writer.request, ['approvals:read']);
    const untouched = await mint((await createMember(env, org, 'admin')).request, ['audit:read']);
    await reader.request('get', '/v1/audit').expect(200);

    await org.request('delete', `/v1/members/${admin.id}`).expect(204);
    for (const key of [reader, writer, grandchild]) await key.request('get', '/v1/approvals').expect(401);
    await untouched.request('get', '/v1/audit').expect(200);
    await org.request('get', '/v1/approvals').expect(200);

    const chain = await readChain(env.services.db, org.orgId);
    const removedAt = chain.findIndex((event) => event.type === 'member.removed' && event.data.memberId === admin.id);
    const revoked = chain.filter((event) => event.type === 'key.revoked' && event.data.memberId === admin.id);
    expect(revoked.map((event) => event.data.keyId).sort()).toEqual([reader.id, writer.id, grandchild.id].sort());
    for (const event of revoked) {
      expect(JSON.parse(event.actor)).toEqual({ type: 'api_key', id: org.keyId });
      expect(event.data).toMatchObject({ reason: 'member.removed' });
      // The same transaction: right after the removal, nothing in between.
      expect(Math.abs(chain.indexOf(event) - removedAt)).toBeLessThanOrEqual(3);
    }
    const listed = (await org.request('get', '/v1/keys').expect(200)).body.keys as { id: string; revokedAt: string | null }[];
    expect(listed.filter((key) => [reader.id, writer.id, grandchild.id].includes(key.id)).every((key) => key.revokedAt !== null)).toBe(
      true,
    );
  });

  it('demoting a member revokes their keys whose scopes the new role lacks; the others keep working', async () => {
    const admin = await createMember(env, org, 'admin');
    await createMember(env, org, 'admin');
    const [keysKey, deciding, reading] = await Promise.all([
      mint(admin.request, ['keys:read']),
      mint(admin.request, ['approvals:decide', 'approvals:read']),
      mint(admin.request, ['audit:read']),
    ]);
    await org.request('patch', `/v1/members/${admin.id}`).send({ role: 'reviewer' }).expect(200);
    await keysKey.request('get', '/v1/keys').expect(401);
    await deciding.request('get', '/v1/approvals').expect(200);
    await reading.request('get', '/v1/audit').expect(200);

    await org.request('patch', `/v1/members/${admin.id}`).send({ role: 'viewer' }).expect(200);
    await deciding.request('get', '/v1/approvals').expect(401);
    await reading.request('get', '/v1/audit').expect(200);

    const revoked = (await readChain(env.services.db, org.orgId)).filter(
      (event) => event.type === 'key.revoked' && event.data.memberId === admin.id,
    );
    expect(revoked.map((event) => [event.data.keyId, event.data.reason])).toEqual([
      [keysKey.id, 'member.updated'],
      [deciding.id, 'member.updated'],
    ]);
  });

  it('keys minted while the member is being removed do not outlive them', async () => {
    await createMember(env, org, 'admin');
    for (let round = 0; round < 3; round++) {
      const admin = await createMember(env, org, 'admin');
      const minting = Array.from({ length: 8 }, () => admin.request('post', '/v1/keys').send({ scopes: ['approvals:read'] }));
      const [removed, ...minted] = await Promise.all([org.request('delete', `/v1/members/${admin.id}`), ...minting]);
      expect(removed.status).toBe(204);
      for (const res of minted) {
        expect([201, 401]).toContain(res.status);
        if (res.status === 201) {
          await env.http.get('/v1/approvals').set('authorization', `Bearer ${res.body.secret}`).expect(401);
        }
      }
    }
  });
});
