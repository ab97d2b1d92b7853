import { describe, expect, it } from 'vitest';
import { readChain } from './support/audit-chain.js';
import { createMember } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

describe('API keys over the API', () => {
  it('creates a key shown once, lists keys without secrets, and a revoked key stops working at once', async () => {
    const admin = await createMember(env, org, 'admin');
    const created = await admin
      .request('post', '/v1/keys')
      .send({ name: 'ci', scopes: ['approvals:read'] })
      .expect(201);
    expect(created.body).toEqual({
      key: {
        id: expect.any(String),
        name: 'ci',
        scopes: ['approvals:read'],
        owner: { type: 'user', id: admin.id },
        ownerUnknown: false,
        createdAt: expect.stringMatching(/Z$/),
        revokedAt: null,
      },
      secret: expect.stringMatching(/^agk_[A-Za-z0-9_-]{43}$/),
    });
    const bearer = (path: string) => env.http.get(path).set('authorization', `Bearer ${created.body.secret}`);
    await bearer('/v1/approvals').expect(200);
    await bearer('/v1/members').expect(403);

    const listed = await admin.request('get', '/v1/keys').expect(200);
    expect(listed.body.keys).toContainEqual(created.body.key);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);

    await admin.request('delete', `/v1/keys/${created.body.key.id}`).expect(204);
    await bearer('/v1/approvals').expect(401);
    const after = await admin.request('get', '/v1/keys').expect(200);
    expect(after.body.keys.find((key: { id: string }) => key.id === created.body.key.id).revokedAt).not.toBeNull();

    // Both are in the audit chain, with whoever did them; revoking again changes nothing and audits nothing.
    await admin.request('delete', `/v1/keys/${created.body.key.id}`).expect(204);
    const chain = (await readChain(env.services.db, org.orgId)).filter((event) => event.data.keyId === created.body.key.id);
    expect(chain.map((event) => [event.type, JSON.parse(event.actor)])).toEqual([
      ['key.created', { type: 'user', id: admin.id }],
      ['key.revoked', { type: 'user', id: admin.id }],
    ]);
    expect(chain[0]!.data).toEqual({
      keyId: created.body.key.id,
      name: 'ci',
      scopes: ['approvals:read'],
      owner: { type: 'user', id: admin.id },
    });
  });

  it('never grants a scope the caller does not hold', async () => {
    const limited = await env.createKey(org.orgId, ['keys:write', 'approvals:read']);
    const as = (method: 'post', path: string) => env.http[method](path).set('authorization', `Bearer ${limited.key}`);
    await as('post', '/v1/keys')
      .send({ scopes: ['approvals:read'] })
      .expect(201);
    const refused = await as('post', '/v1/keys')
      .send({ scopes: ['approvals:read', 'approvals:decide'] })
      .expect(403);
    expect(refused.body.detail).toContain('approvals:decide');
  });

  it('keeps keys to admins and to their organization', async () => {
    const reviewer = await createMember(env, org, 'reviewer');
    await reviewer.request('get', '/v1/keys').expect(403);
    await reviewer
      .request('post', '/v1/keys')
      .send({ scopes: ['approvals:read'] })
      .expect(403);
    const other = await env.createOrg();
    await other.request('delete', `/v1/keys/${org.keyId}`).expect(404);
    await org.request('get', '/v1/approvals').expect(200);
  });

  it.each([
    ['no scopes', { scopes: [] }, 'scopes'],
    ['an unknown scope', { scopes: ['approvals:everything'] }, 'scopes.0'],
    ['a repeated scope', { scopes: ['audit:read', 'audit:read'] }, 'scopes'],
    ['an unknown field', { scopes: ['audit:read'], expires: 'never' }, 'expires'],
  ])('refuses %s with 422', async (_name, body, path) => {
    const res = await org.request('post', '/v1/keys').send(body).expect(422);
    expect(res.body.errors.map((error: { path: string }) => error.path)).toContain(path);
  });
});
