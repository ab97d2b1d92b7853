import { describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

describe('reads that share one statement', () => {
  it('answers each request for its own key, and refuses a revoked or unknown key read in the same batch', async () => {
    const other = await env.createOrg();
    const readOnly = await env.createKey(org.orgId, ['approvals:read']);
    const revoked = await env.createKey(other.orgId, ['approvals:read', 'approvals:write']);
    await env.services.orgs.revokeApiKeyOf((await env.services.orgs.authenticate(other.key))!, revoked.id);
    const mine = (await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(201)).body.id;
    const theirs = (await other.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'p' }).expect(201)).body.id;

    const read = (key: string, id: string) => env.http.get(`/v1/approvals/${id}`).set('authorization', `Bearer ${key}`);
    const cases = [
      { key: org.key, id: mine, status: 200 },
      { key: other.key, id: theirs, status: 200 },
      { key: org.key, id: theirs, status: 404 },
      { key: other.key, id: mine, status: 404 },
      { key: readOnly.key, id: mine, status: 200 },
      { key: revoked.key, id: theirs, status: 401 },
      { key: `agk_${'B'.repeat(43)}`, id: mine, status: 401 },
    ];
    const all = Array.from({ length: 10 }, () => cases).flat();
    const answers = await Promise.all(all.map(({ key, id }) => read(key, id)));
    expect(answers.map((res) => res.status)).toEqual(all.map(({ status }) => status));
    for (const [i, res] of answers.entries()) if (res.status === 200) expect(res.body.id).toBe(all[i]!.id);

    // The read-only key shares its scope set with nobody that may write, and cannot write.
    await env.http
      .post('/v1/approvals')
      .set('authorization', `Bearer ${readOnly.key}`)
      .send({ action: 'x', payload: {}, policyKey: 'p' })
      .expect(403);
  });

  it('never lets a shared scope set change', async () => {
    const tenant = (await env.services.orgs.authenticate(org.key))!;
    const scopes = tenant.scopes as Set<string>;
    expect(() => scopes.add('keys:write')).toThrow(TypeError);
    expect(() => scopes.delete('approvals:read')).toThrow(TypeError);
    expect(() => scopes.clear()).toThrow(TypeError);
    expect((await env.services.orgs.authenticate(org.key))!.scopes).toBe(scopes);
    expect(scopes.has('approvals:read')).toBe(true);
  });
});
