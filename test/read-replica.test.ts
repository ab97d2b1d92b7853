import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../src/db/migrator.js';
import { withTimeout } from '../src/lib/time.js';
import { SCOPES } from '../src/modules/orgs/tenant.js';
import { eventually } from './support/eventually.js';
import { startStreamingPair, type StreamingPair } from './support/pg-replica.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const MAX_LAG_MS = 2_000;
const DATABASE = 'approval_gate';

const cleanups: (() => Promise<unknown>)[] = [];
let pair: StreamingPair;
let env: TestEnv;
let org: TestOrg;
/** A second principal of the organization: another service key, which writes nothing it reads. */
let other: { key: string };

beforeAll(async () => {
  pair = await startStreamingPair();
  cleanups.push(() => pair.close());
  await applyMigrations(pair.primaryUrl(DATABASE));
  env = await createTestEnv({
    DATABASE_URL: pair.primaryUrl(DATABASE),
    DATABASE_READ_URL: pair.replicaUrl(DATABASE),
    DATABASE_READ_MAX_LAG_MS: String(MAX_LAG_MS),
    DATABASE_CONNECT_TIMEOUT_MS: '10000',
  });
  cleanups.push(() => env.close());
  org = await env.createOrg();
  other = await env.createKey(org.orgId, SCOPES);
  await org.request('put', '/v1/policies/review').send({ timeoutSeconds: 3600 }).expect(200);
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 60_000);

const as = (key: string, path: string) => env.http.get(path).set('authorization', `Bearer ${key}`);
const listedIds = async (key: string) =>
  ((await as(key, '/v1/approvals?limit=200').expect(200)).body.approvals as { id: string }[]).map((a) => a.id);
const auditedIds = async (key: string) =>
  ((await as(key, '/v1/audit?limit=1000').expect(200)).body.events as { type: string; data: { approvalId?: string } }[])
    .filter((event) => event.type === 'approval.created')
    .map((event) => event.data.approvalId);
const create = async (key = org.key) =>
  (
    await env.http
      .post('/v1/approvals')
      .set('authorization', `Bearer ${key}`)
      .send({ action: 'deploy', payload: {}, policyKey: 'review' })
      .expect(201)
  ).body.id as string;
/** The replica has replayed everything the primary has now. */
const caughtUp = async () => {
  const [{ lsn }] = (await env.services.sql.query<{ lsn: string }>(null, 'SELECT pg_current_wal_insert_lsn()::text AS lsn', [])) as [
    { lsn: string },
  ];
  await eventually(async () => (await pair.onReplica<{ ok: boolean }>(`SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS ok`))[0]!.ok);
  await eventually(() => env.services.reads.replica!.fresh);
};

describe('a read replica (DATABASE_READ_URL)', () => {
  it('serves listing and audit reads while it is fresh, and a writer its own writes from the primary', async () => {
    const peer = await env.createPeer();
    await create();
    await caughtUp();
    await pair.pauseReplay();
    try {
      const id = await create();
      // At once: the writer reads its write back, from any web process (the mark is in Redis);
      // another principal reads the replica, a moment behind, and misses it within the allowed lag.
      const [writerList, writerAudit, peerList, otherList, otherAudit] = await Promise.all([
        listedIds(org.key),
        auditedIds(org.key),
        peer.http.get('/v1/approvals?limit=200').set('authorization', `Bearer ${org.key}`).expect(200),
        listedIds(other.key),
        auditedIds(other.key),
      ]);
      expect(writerList).toContain(id);
      expect(writerAudit).toContain(id);
      expect(peerList.body.approvals.map((a: { id: string }) => a.id)).toContain(id);
      expect(otherList).not.toContain(id);
      expect(otherAudit).not.toContain(id);
      // Past the allowed lag, the paused replica serves nothing: the primary answers.
      await sleep(MAX_LAG_MS + 100);
      expect(env.services.reads.replica!.fresh).toBe(false);
      expect(await listedIds(other.key)).toContain(id);
      expect(await auditedIds(other.key)).toContain(id);
    } finally {
      await pair.resumeReplay();
    }
    await caughtUp();
  });

  it('gives every writer its own writes, many principals at once, while the replica lags', async () => {
    const keys = await Promise.all(Array.from({ length: 12 }, () => env.createKey(org.orgId, SCOPES)));
    await caughtUp();
    await pair.pauseReplay();
    try {
      const seen = await Promise.all(
        keys.map(async ({ key }) => {
          const id = await create(key);
          return (await listedIds(key)).includes(id) && (await auditedIds(key)).includes(id);
        }),
      );
      expect(seen).toEqual(keys.map(() => true));
    } finally {
      await pair.resumeReplay();
    }
    await caughtUp();
  });

  it('decides on the primary what the replica has not seen yet', async () => {
    await caughtUp();
    await pair.pauseReplay();
    try {
      const id = await create();
      expect(await listedIds(other.key)).not.toContain(id);
      await org.asReviewer('post', `/v1/approvals/${id}/decision`).send({ verdict: 'approved' }).expect(200);
      expect((await as(other.key, `/v1/approvals/${id}`).expect(200)).body.status).toBe('approved');
    } finally {
      await pair.resumeReplay();
    }
    await caughtUp();
  });

  it('verifies the chain and exports it from the replica, and from the primary when the replica lacks the head', async () => {
    await caughtUp();
    const verified = await as(other.key, '/v1/audit?limit=1&verify=true').expect(200);
    expect(verified.body.verification).toMatchObject({ intact: true, brokenAtSeq: null });
    const head = async () =>
      Number(
        (await env.services.sql.query<{ seq: string }>(null, 'SELECT seq FROM audit_chain_heads WHERE org_id = $1', [org.orgId]))[0]!.seq,
      );
    const exportAll = async () => {
      const created = await env.http.post('/v1/audit/exports').set('authorization', `Bearer ${other.key}`).send({}).expect(202);
      return env.services.audit.runExport(org.orgId, created.body.id as string);
    };
    // Fresh: the COPY reads the replica, which has every event up to the head.
    expect((await exportAll())?.rowCount).toBe(await head());

    await pair.pauseReplay();
    try {
      await create();
      await create();
      // The replica lacks the newest events: the export reads the primary and misses none.
      expect((await exportAll())?.rowCount).toBe(await head());
    } finally {
      await pair.resumeReplay();
    }
    await caughtUp();
  });

  it('sends reads to the primary when the replica goes away, without an error, and back when it returns', async () => {
    await caughtUp();
    const ids = [await create(), await create()];
    await caughtUp();
    await pair.stopReplica();
    try {
      // At once, before any check has noticed: each failed statement is answered by the primary.
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, n) => as(other.key, n % 2 ? '/v1/approvals?limit=200' : '/v1/audit?limit=1000&verify=true')),
      );
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
      expect(await listedIds(other.key)).toEqual(expect.arrayContaining(ids));
      expect(env.services.reads.replica!.fresh).toBe(false);
    } finally {
      await pair.startReplica();
    }
    await eventually(() => env.services.reads.replica!.fresh, 15_000);
    expect(await listedIds(other.key)).toEqual(expect.arrayContaining(ids));
  });
});
