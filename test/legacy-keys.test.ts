import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/cli.js';
import type { Scope } from '../src/modules/orgs/tenant.js';
import { readChain } from './support/audit-chain.js';
import { createMember, type TestMember } from './support/members.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const run = promisify(execFile);
let env: TestEnv;
let org: TestOrg;
useTestEnv((created) => ({ env, org } = created));

beforeAll(async () => {
  await org.request('put', '/v1/policies/two-eyes').send({ quorum: 2 }).expect(200);
  await org.request('put', '/v1/policies/default').send({}).expect(200);
  await org.request('put', '/v1/policies/self-ok').send({ allowSelfApproval: true }).expect(200);
});

interface Key {
  id: string;
  secret: string;
  request: TestOrg['request'];
}

function keyOf(id: string, secret: string): Key {
  return { id, secret, request: (method, path) => env.http[method](path).set('authorization', `Bearer ${secret}`) };
}

/**
 * A key made before owners existed whose maker nobody recorded, as the legacy_key_owners migration
 * leaves it (test/key-owner-backfill.test.ts upgrades such a database): no owner, owner unknown.
 */
async function legacyKey(scopes: Scope[], orgId = org.orgId): Promise<Key> {
  const { id, key } = await env.createKey(orgId, scopes);
  await env.services.db.apiKey.update({ where: { id }, data: { ownerUnknown: true } });
  return keyOf(id, key);
}

/** A key the legacy key made with POST /v1/keys while owners existed and the defect let it: owned by that key. */
async function madeBy(maker: Key, scopes: Scope[]): Promise<Key> {
  const { id, key } = await env.createKey(org.orgId, scopes);
  await env.services.db.apiKey.update({ where: { id }, data: { ownerType: 'key', ownerId: maker.id } });
  return keyOf(id, key);
}

async function requestApproval(policyKey: string, as = org.request): Promise<string> {
  return (
    await as('post', '/v1/approvals')
      .send({ action: 'pay', payload: { amount: 5000 }, policyKey })
      .expect(201)
  ).body.id;
}

/** The CLI as an operator runs it: a process of its own. */
async function cliProcess(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const options = { env: { ...process.env, DATABASE_URL: env.config.DATABASE_URL }, cwd: process.cwd() };
  return run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], options).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

const cli = (...args: string[]) => runCli(args, env.services, { publicUrl: env.config.PUBLIC_URL });

async function listed(id: string): Promise<{ owner: unknown; ownerUnknown: boolean }> {
  const keys = (await org.request('get', '/v1/keys').expect(200)).body.keys as { id: string; owner: unknown; ownerUnknown: boolean }[];
  return keys.find((key) => key.id === id)!;
}

const approve = { verdict: 'approved' };

describe('a key whose owner is unknown', () => {
  it('keeps working, but its votes are refused 403 key_unattributed with how to fix it, and nothing is recorded', async () => {
    const legacy = await legacyKey(['approvals:read', 'approvals:write', 'approvals:decide', 'policies:read']);
    await legacy.request('get', '/v1/approvals').expect(200);
    await legacy.request('get', '/v1/policies/default').expect(200);
    const id = await requestApproval('two-eyes');
    for (const verdict of ['approved', 'rejected']) {
      const refused = await legacy.request('post', `/v1/approvals/${id}/decision`).send({ verdict }).expect(403);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body).toMatchObject({ status: 403, code: 'key_unattributed' });
      expect(refused.body.detail).toContain(legacy.id);
      expect(refused.body.detail).toContain(`key:attribute --org ${org.orgId} --id ${legacy.id}`);
    }
    const after = (await org.request('get', `/v1/approvals/${id}`).expect(200)).body;
    expect(after).toMatchObject({ status: 'pending', votes: [] });
    const inbox = (await legacy.request('get', '/v1/approvals?decidable=true&limit=200').expect(200)).body.approvals as { id: string }[];
    expect(inbox.map((approval) => approval.id)).not.toContain(id);
  });

  it('many concurrent votes by it are all refused, and none is counted', async () => {
    const legacy = await legacyKey(['approvals:decide']);
    const id = await requestApproval('default');
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => legacy.request('post', `/v1/approvals/${id}/decision`).send(approve)),
    );
    expect(statuses.map((res) => [res.status, res.body.code])).toEqual(Array(12).fill([403, 'key_unattributed']));
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body).toMatchObject({ status: 'pending', votes: [] });
  });

  it('cannot make keys: 403 key_unattributed, and no key is made', async () => {
    const legacy = await legacyKey(['keys:write', 'keys:read', 'approvals:read']);
    const before = (await org.request('get', '/v1/keys').expect(200)).body.keys.length;
    const refused = await legacy
      .request('post', '/v1/keys')
      .send({ scopes: ['approvals:read'] })
      .expect(403);
    expect(refused.body).toMatchObject({ status: 403, code: 'key_unattributed' });
    expect(refused.body.detail).toContain(`key:attribute --org ${org.orgId} --id ${legacy.id}`);
    expect((await org.request('get', '/v1/keys').expect(200)).body.keys).toHaveLength(before);
    // It still lists keys.
    await legacy.request('get', '/v1/keys').expect(200);
  });

  it('is listed with owner null and ownerUnknown; a key it made is listed with it as owner, unknown too, and refused as it is', async () => {
    const legacy = await legacyKey(['approvals:decide', 'keys:write']);
    const child = await madeBy(legacy, ['approvals:decide', 'keys:write']);
    expect(await listed(legacy.id)).toMatchObject({ owner: null, ownerUnknown: true });
    expect(await listed(child.id)).toMatchObject({ owner: { type: 'key', id: legacy.id }, ownerUnknown: true });
    expect(await listed(org.keyId)).toMatchObject({ owner: null, ownerUnknown: false });

    const id = await requestApproval('default');
    const refused = await child.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(403);
    expect(refused.body.code).toBe('key_unattributed');
    expect(refused.body.detail).toContain(`--id ${legacy.id}`);
    expect(
      (
        await child
          .request('post', '/v1/keys')
          .send({ scopes: ['approvals:decide'] })
          .expect(403)
      ).body.code,
    ).toBe('key_unattributed');
  });

  it('what it requested nobody may decide unless the policy allows self-approval: 403 requester_unattributed', async () => {
    const agent = await legacyKey(['approvals:write', 'approvals:read']);
    const reviewer = await createMember(env, org, 'reviewer');
    const id = await requestApproval('default', agent.request);
    const refused = await reviewer.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(403);
    expect(refused.body).toMatchObject({ status: 403, code: 'requester_unattributed' });
    expect(refused.body.detail).toContain(`key:attribute --org ${org.orgId} --id ${agent.id}`);
    await org.asReviewer('post', `/v1/approvals/${id}/decision`).send(approve).expect(403);

    const allowed = await requestApproval('self-ok', agent.request);
    await reviewer.request('post', `/v1/approvals/${allowed}/decision`).send(approve).expect(200);
  });
});

describe('npm run cli -- key:attribute', () => {
  let admin: TestMember;
  let reviewer: TestMember;
  beforeAll(async () => {
    [admin, reviewer] = await Promise.all([createMember(env, org, 'admin'), createMember(env, org, 'reviewer')]);
  });

  it('to a member, as a process: the key and the keys it made are theirs, and they cannot reach a quorum of two with it', async () => {
    // An admin minted a key before the upgrade; it made another since.
    const minted = await legacyKey(['approvals:decide', 'approvals:read', 'keys:write']);
    const child = await madeBy(minted, ['approvals:decide']);
    const id = await requestApproval('two-eyes');
    await admin.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(200);
    // Unattributed, the minted key is no second voter...
    await minted.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(403);

    const attributed = await cliProcess('key:attribute', '--org', org.orgId, '--id', minted.id, '--member', admin.email.toUpperCase());
    expect(attributed).toMatchObject({ code: 0, stderr: '' });
    const owner = { type: 'user', id: admin.id };
    const keys = JSON.parse(attributed.stdout).keys as { id: string; owner: unknown; ownerUnknown: boolean }[];
    expect(keys.map((key) => [key.id, key.owner, key.ownerUnknown]).sort()).toEqual(
      [
        [minted.id, owner, false],
        [child.id, owner, false],
      ].sort(),
    );
    expect(await listed(minted.id)).toMatchObject({ owner, ownerUnknown: false });
    expect(await listed(child.id)).toMatchObject({ owner, ownerUnknown: false });

    // ...and attributed, it is the admin, who voted already: 409, through either key.
    for (const key of [minted, child]) {
      expect((await key.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(409)).body.detail).toContain('already voted');
    }
    expect((await org.request('get', `/v1/approvals/${id}`).expect(200)).body).toMatchObject({ status: 'pending' });
    await reviewer.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(200);

    // Its votes count as the admin's from now on, and it makes keys that are the admin's.
    const next = await requestApproval('two-eyes');
    const settled = await minted.request('post', `/v1/approvals/${next}/decision`).send(approve).expect(200);
    expect(settled.body.votes[0].by).toEqual({ type: 'api_key', id: minted.id, owner });
    await admin.request('post', `/v1/approvals/${next}/decision`).send(approve).expect(409);
    const made = await minted
      .request('post', '/v1/keys')
      .send({ scopes: ['approvals:read'] })
      .expect(201);
    expect(made.body.key).toMatchObject({ owner, ownerUnknown: false });

    const events = (await readChain(env.services.db, org.orgId)).filter((event) => event.type === 'key.attributed');
    const recorded = events.filter((event) => [minted.id, child.id].includes(event.data.keyId as string));
    expect(recorded).toHaveLength(2);
    for (const event of recorded) {
      expect(JSON.parse(event.actor)).toEqual({ type: 'system', id: 'cli' });
      expect(event.data).toMatchObject({ owner });
    }
  });

  it('to a member, the requests the key made are theirs: they may not decide them, others may', async () => {
    const author = await createMember(env, org, 'admin');
    const agent = await legacyKey(['approvals:write', 'approvals:read']);
    const id = await requestApproval('default', agent.request);
    await cli('key:attribute', '--org', org.orgId, '--id', agent.id, '--member', author.email);
    expect((await author.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(403)).body.code).toBe('self_approval');
    await reviewer.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(200);
  });

  it('as a service key: it votes as itself, one voter with the keys it made', async () => {
    const service = await legacyKey(['approvals:decide', 'keys:write']);
    const child = await madeBy(service, ['approvals:decide']);
    const result = await cliProcess('key:attribute', '--org', org.orgId, '--id', service.id, '--service');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).keys).toEqual([expect.objectContaining({ id: service.id, owner: null, ownerUnknown: false })]);
    expect(await listed(child.id)).toMatchObject({ owner: { type: 'key', id: service.id }, ownerUnknown: false });

    const id = await requestApproval('two-eyes');
    await service.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(200);
    await child.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(409);
    await admin.request('post', `/v1/approvals/${id}/decision`).send(approve).expect(200);
    const event = (await readChain(env.services.db, org.orgId)).find(
      (candidate) => candidate.type === 'key.attributed' && candidate.data.keyId === service.id,
    );
    expect(event?.data).toMatchObject({ owner: null });
  });

  it('refuses a key whose owner is known, a key made by an unknown key (naming that key), and the second of two attributions', async () => {
    const failed = await cliProcess('key:attribute', '--org', org.orgId, '--id', org.keyId, '--service');
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    expect(failed.stderr).toMatch(/already has its owner/);

    const legacy = await legacyKey(['approvals:decide']);
    const child = await madeBy(legacy, ['approvals:decide']);
    await expect(cli('key:attribute', '--org', org.orgId, '--id', child.id, '--member', admin.email)).rejects.toThrow(
      new RegExp(`made by API key ${legacy.id}, whose owner is unknown`),
    );

    await cli('key:attribute', '--org', org.orgId, '--id', legacy.id, '--service');
    await expect(cli('key:attribute', '--org', org.orgId, '--id', legacy.id, '--member', admin.email)).rejects.toThrow(
      /already has its owner/,
    );
    expect(await listed(legacy.id)).toMatchObject({ owner: null, ownerUnknown: false });
  });

  it('many concurrent attributions of one key: exactly one wins, the others are refused', async () => {
    const legacy = await legacyKey(['approvals:decide']);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0
          ? cli('key:attribute', '--org', org.orgId, '--id', legacy.id, '--service')
          : cli('key:attribute', '--org', org.orgId, '--id', legacy.id, '--member', admin.email),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/already has its owner/);
    }
    const events = (await readChain(env.services.db, org.orgId)).filter(
      (event) => event.type === 'key.attributed' && event.data.keyId === legacy.id,
    );
    expect(events).toHaveLength(1);
  });

  it('refuses a member whose role lacks a scope of a live key that would be theirs, naming it; a revoked one does not count', async () => {
    const reviewerOnly = await createMember(env, org, 'reviewer');
    const legacy = await legacyKey(['approvals:decide']);
    const child = await madeBy(legacy, ['keys:write']);
    await expect(cli('key:attribute', '--org', org.orgId, '--id', legacy.id, '--member', reviewerOnly.email)).rejects.toThrow(
      new RegExp(`reviewer role lacks scopes of keys that would be theirs: ${child.id} \\(keys:write\\)`),
    );
    expect(await listed(legacy.id)).toMatchObject({ owner: null, ownerUnknown: true });

    await org.request('delete', `/v1/keys/${child.id}`).expect(204);
    await cli('key:attribute', '--org', org.orgId, '--id', legacy.id, '--member', reviewerOnly.email);
    expect(await listed(legacy.id)).toMatchObject({ owner: { type: 'user', id: reviewerOnly.id }, ownerUnknown: false });
    // Their key now: a role change revokes it like any key of theirs.
    await org.request('patch', `/v1/members/${reviewerOnly.id}`).send({ role: 'viewer' }).expect(200);
    await legacy.request('get', '/v1/approvals').expect(401);
  });

  it.each([
    [['--id', '00000000-0000-4000-8000-000000000000', '--service'], /No API key with id/],
    [['--id', 'not-a-key', '--service'], /No API key with id/],
    [['--id', 'KEY', '--member', 'nobody@acme.test'], /no member with the email 'nobody@acme.test'/],
    [['--id', 'KEY'], /exactly one of --member EMAIL .* and --service/],
    [['--id', 'KEY', '--service', '--member', 'a@acme.test'], /exactly one of --member/],
    [['--id', 'KEY', '--member', 'not-an-email'], /--member/],
  ])('rejects %j with a clear message, changing nothing', async (args, message) => {
    const legacy = await legacyKey(['approvals:read']);
    const filled = args.map((arg) => (arg === 'KEY' ? legacy.id : arg));
    await expect(cli('key:attribute', '--org', org.orgId, ...filled)).rejects.toThrow(message);
    expect(await listed(legacy.id)).toMatchObject({ ownerUnknown: true });
  });

  it('does not reach another organization’s key', async () => {
    const other = await env.createOrg();
    const foreign = await legacyKey(['approvals:read'], other.orgId);
    await expect(cli('key:attribute', '--org', org.orgId, '--id', foreign.id, '--member', admin.email)).rejects.toThrow(
      /No API key with id/,
    );
    expect(await env.services.db.apiKey.findUniqueOrThrow({ where: { id: foreign.id } })).toMatchObject({
      ownerUnknown: true,
      ownerType: null,
    });
  });
});
