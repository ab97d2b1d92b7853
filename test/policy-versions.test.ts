import { describe, expect, it } from 'vitest';
import { readChain } from './support/audit-chain.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

describe('policy versions', () => {
  it('counts every PUT from 1, goes on counting after a DELETE, and reads each version later', async () => {
    const first = await org.request('put', '/v1/policies/versioned').send({ defaultOutcome: 'allow' }).expect(200);
    expect(first.body.version).toBe(1);
    const second = await org.request('put', '/v1/policies/versioned').send({ quorum: 2 }).expect(200);
    expect(second.body.version).toBe(2);
    await org.request('delete', '/v1/policies/versioned').expect(204);
    const third = await org.request('put', '/v1/policies/versioned').send({ timeoutSeconds: 60 }).expect(200);
    expect(third.body.version).toBe(3);
    expect((await org.request('get', '/v1/policies/versioned').expect(200)).body).toEqual(third.body);

    const one = await org.request('get', '/v1/policies/versioned?version=1').expect(200);
    expect(one.body).toEqual({ ...first.body, changedBy: { type: 'api_key', id: org.keyId } });
    expect((await org.request('get', '/v1/policies/versioned?version=2').expect(200)).body).toMatchObject({ version: 2, quorum: 2 });
    expect((await org.request('get', '/v1/policies/versioned?version=4').expect(404)).body.code).toBe('not_found');

    const chain = await readChain(env.services.db, org.orgId);
    expect(chain.filter((event) => event.type === 'policy.updated').map((event) => event.data.version)).toEqual([1, 2, 3]);
  });

  it('lists versions newest first, paged with a cursor, also for a deleted policy', async () => {
    for (let index = 0; index < 5; index++)
      await org
        .request('put', '/v1/policies/paged')
        .send({ timeoutSeconds: 60 + index })
        .expect(200);
    await org.request('delete', '/v1/policies/paged').expect(204);
    const page1 = await org.request('get', '/v1/policies/paged/versions?limit=2').expect(200);
    expect(page1.body.versions.map((v: { version: number }) => v.version)).toEqual([5, 4]);
    expect(page1.body.versions[0]).toMatchObject({ timeoutSeconds: 64, changedBy: { type: 'api_key', id: org.keyId } });
    const page2 = await org.request('get', `/v1/policies/paged/versions?limit=2&cursor=${page1.body.nextCursor}`).expect(200);
    expect(page2.body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2]);
    const page3 = await org.request('get', `/v1/policies/paged/versions?limit=2&cursor=${page2.body.nextCursor}`).expect(200);
    expect(page3.body).toMatchObject({ versions: [{ version: 1 }], nextCursor: null });
  });

  it.each([
    ['a version that is not a number', '/v1/policies/paged?version=abc', 'version'],
    ['version 0', '/v1/policies/paged?version=0', 'version'],
    ['an unknown parameter', '/v1/policies/paged?verison=1', 'verison'],
    ['a cursor this API did not give', '/v1/policies/paged/versions?cursor=nonsense', 'cursor'],
    ['a limit above 200', '/v1/policies/paged/versions?limit=201', 'limit'],
  ])('refuses %s with 422 naming it', async (_name, path, field) => {
    await org.request('put', '/v1/policies/paged').send({}).expect(200);
    const response = await org.request('get', path).expect(422);
    expect(response.body.errors.map((error: { path: string }) => error.path)).toContain(field);
  });

  it('answers 404 for the versions of a key never stored, and of another organization', async () => {
    await org.request('get', '/v1/policies/never/versions').expect(404);
    const other = await env.createOrg();
    await other.request('put', '/v1/policies/theirs').send({}).expect(200);
    await org.request('get', '/v1/policies/theirs/versions').expect(404);
    await org.request('get', '/v1/policies/theirs?version=1').expect(404);
  });

  it('gives concurrent PUTs of one key, from two processes, distinct versions, none lost or repeated', async () => {
    // Each process holds 10 connections in tests: 25 PUTs from each keep both pools full and queueing.
    const peer = await env.createPeer();
    const perProcess = 25;
    const count = perProcess * 2;
    const put = (index: number) => {
      const body = { timeoutSeconds: 100 + index };
      return index % 2 === 0
        ? org.request('put', '/v1/policies/raced').send(body)
        : peer.http.put('/v1/policies/raced').set('authorization', `Bearer ${org.key}`).send(body);
    };
    const answers = await Promise.all(Array.from({ length: count }, (_, index) => put(index)));
    expect(answers.filter((answer) => answer.status !== 200).map((answer) => answer.body)).toEqual([]);
    const versions = answers.map((answer) => answer.body.version as number).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: count }, (_, index) => index + 1));
    // Each stored version is the document of the PUT that got its number.
    const listed = await org.request('get', `/v1/policies/raced/versions?limit=${count}`).expect(200);
    const byVersion = new Map(answers.map((answer) => [answer.body.version, answer.body.timeoutSeconds]));
    expect(listed.body.versions).toHaveLength(count);
    for (const version of listed.body.versions) expect(version.timeoutSeconds).toBe(byVersion.get(version.version));
    // The current policy is the last version given.
    expect((await org.request('get', '/v1/policies/raced').expect(200)).body).toMatchObject({
      version: count,
      timeoutSeconds: byVersion.get(count),
    });
  });

  it('records the version an approval was evaluated under: view, webhook data and audit event', async () => {
    await org.request('put', '/v1/policies/recorded').send({}).expect(200);
    await org.request('put', '/v1/policies/recorded').send({ defaultOutcome: 'allow' }).expect(200);
    const allowed = await org.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'recorded' }).expect(200);
    expect(allowed.body).toMatchObject({ status: 'approved', policyVersion: 2 });
    await org.request('put', '/v1/policies/recorded').send({}).expect(200);
    const pending = await org.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'recorded' }).expect(201);
    expect(pending.body).toMatchObject({ status: 'pending', policyVersion: 3 });
    const orphan = await org.request('post', '/v1/approvals').send({ action: 'a', payload: {}, policyKey: 'none' }).expect(201);
    expect(orphan.body.policyVersion).toBeNull();

    const decided = await org.asReviewer('post', `/v1/approvals/${pending.body.id}/decision`).send({ verdict: 'approved' }).expect(200);
    expect(decided.body.policyVersion).toBe(3);
    expect((await org.request('get', `/v1/approvals/${pending.body.id}`).expect(200)).body.policyVersion).toBe(3);

    const chain = await readChain(env.services.db, org.orgId);
    const created = (id: string) => chain.find((event) => event.type === 'approval.created' && event.data.approvalId === id)!;
    expect(created(allowed.body.id).data.policyVersion).toBe(2);
    expect(created(pending.body.id).data.policyVersion).toBe(3);
    expect(created(orphan.body.id).data.policyVersion).toBeNull();

    const bodies = await env.services.db.outboxMessage.findMany({ where: { orgId: org.orgId, body: { not: { equals: null } } } });
    const webhook = (type: string, id: string) =>
      bodies
        .map((row) => row.body as { type: string; data: Record<string, unknown> })
        .find((body) => body.type === type && body.data.approvalId === id)!;
    expect(webhook('approval.approved', allowed.body.id).data.policyVersion).toBe(2);
    expect(webhook('approval.approved', pending.body.id).data.policyVersion).toBe(3);
    expect(webhook('approval.orphaned', orphan.body.id).data.policyVersion).toBeNull();
  });
});
