import { createHash, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/cli.js';
import { withTimeout } from '../src/lib/time.js';
import { createServices } from '../src/services.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { jcs, readChain } from './support/audit-chain.js';
import { eventually } from './support/eventually.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { startReceiver } from './support/webhook-receiver.js';
import { verifyWebhook } from '../src/modules/webhooks/verify-webhook.js';
import { runVerifier } from './support/verifier.js';
import { spawnWorker } from './support/worker-process.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await withTimeout(cleanup(), 15_000, 'cleanup').catch(() => {});
}, 120_000);

function newKey(): { privateKey: KeyObject; env: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, env: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64') };
}

interface Checkpoint {
  orgId: string;
  seq: number;
  hash: string;
  createdAt: string;
  keyId: string;
  signature: string;
}

/** An auditor's own check of contract C14, from the contract alone: Ed25519 over JCS of the five members. */
function independentlyValid(checkpoint: Checkpoint, publicKeyPem: string): boolean {
  const { orgId, seq, hash, createdAt, keyId } = checkpoint;
  return verify(
    null,
    Buffer.from(jcs({ orgId, seq, hash, createdAt, keyId })),
    createPublicKey(publicKeyPem),
    Buffer.from(checkpoint.signature, 'base64'),
  );
}

async function setUp(signingKey: string, overrides: Record<string, string> = {}) {
  const env = await createTestEnv({
    AUDIT_SIGNING_KEY: signingKey,
    AUDIT_CHECKPOINT_EVERY: '5',
    OUTBOX_POLL_INTERVAL_MS: '100',
    ...overrides,
  });
  cleanups.push(() => env.close());
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  return { env, org };
}

async function runWorker(env: TestEnv, roles: string[]): Promise<WorkerRuntime> {
  const worker = await startWorkerRuntime(env.services, roles);
  cleanups.push(() => worker.stop());
  return worker;
}

/** `n` approvals created: with the policy put first, the chain then holds 1 + n events. */
async function createApprovals(org: TestOrg, n: number) {
  for (let i = 0; i < n; i++)
    await org
      .request('post', '/v1/approvals')
      .send({ action: `a${i}`, payload: { i }, policyKey: 'review' })
      .expect(201);
}

let scratch: string | undefined;

async function writeScratch(name: string, content: string): Promise<string> {
  scratch ??= await mkdtemp(path.join(tmpdir(), 'ag-checkpoints-'));
  const file = path.join(scratch, name);
  await writeFile(file, content);
  return file;
}

/** What an auditor takes away: the export (with and without its checkpoints), the keys, and the checkpoints kept. */
async function exportFiles(env: TestEnv, org: TestOrg, checkpoints: Checkpoint[]) {
  const get = (query: string) => org.request('get', `/v1/audit?limit=1000${query}`).expect(200);
  const keys = (await env.http.get('/v1/audit/keys').expect(200)).body;
  const prefix = org.orgId.slice(0, 8);
  return {
    csv: await writeScratch(`${prefix}.csv`, (await get('&format=csv')).text),
    csvWithCheckpoints: await writeScratch(`${prefix}-with-checkpoints.csv`, (await get('&format=csv&checkpoints=true')).text),
    jsonWithCheckpoints: await writeScratch(`${prefix}-with-checkpoints.json`, JSON.stringify((await get('&checkpoints=true')).body)),
    keys: await writeScratch(`${prefix}-keys.json`, JSON.stringify(keys)),
    publicKey: await writeScratch(`${prefix}-key.pem`, keys.keys[0].publicKey),
    checkpoints: await writeScratch(`${prefix}-checkpoints.json`, JSON.stringify({ checkpoints })),
  };
}

const checkpointsOf = async (org: TestOrg) =>
  (await org.request('get', '/v1/audit/checkpoints').expect(200)).body.checkpoints as Checkpoint[];

describe('signed audit checkpoints', () => {
  it('signs the chain every AUDIT_CHECKPOINT_EVERY events, verifiably with the published key alone', async () => {
    const key = newKey();
    const { env, org } = await setUp(key.env);
    await runWorker(env, ['outbox-relay', 'audit-checkpoints']);
    await createApprovals(org, 11);

    const checkpoints = await eventually(async () => {
      const listed = await checkpointsOf(org);
      return listed.length === 2 ? listed : null;
    });
    const chain = await readChain(env.services.db, org.orgId);
    expect(checkpoints.map((c) => c.seq)).toEqual([5, 10]);
    for (const checkpoint of checkpoints) {
      expect(checkpoint).toMatchObject({
        orgId: org.orgId,
        hash: chain[checkpoint.seq - 1]!.hash,
        createdAt: expect.stringMatching(/\.\d{3}Z$/),
      });
    }

    const keys = (await env.http.get('/v1/audit/keys').expect(200)).body.keys;
    expect(keys).toEqual([
      {
        keyId: checkpoints[0]!.keyId,
        publicKey: expect.stringContaining('BEGIN PUBLIC KEY'),
        createdAt: expect.any(String),
        retiredAt: null,
      },
    ]);
    // The key id is the SHA-256 of the public key's SPKI DER, first 16 hex digits.
    const spki = createPublicKey(keys[0].publicKey).export({ type: 'spki', format: 'der' });
    expect(keys[0].keyId).toBe(createHash('sha256').update(spki).digest('hex').slice(0, 16));
    for (const checkpoint of checkpoints) expect(independentlyValid(checkpoint, keys[0].publicKey)).toBe(true);

    const verification = (await org.request('get', '/v1/audit?verify=true&limit=1').expect(200)).body.verification;
    expect(verification).toEqual({ intact: true, count: 12, headHash: chain.at(-1)!.hash, brokenAtSeq: null, checkpoints: 2 });
    // A checkpoint is not an audit event: signing moved nothing in the chain.
    expect(await readChain(env.services.db, org.orgId)).toHaveLength(12);

    // Exports carry the checkpoints in their range when asked.
    const page = (await org.request('get', '/v1/audit?checkpoints=true&after=4&limit=5').expect(200)).body;
    expect(page.events.map((e: { seq: number }) => e.seq)).toEqual([5, 6, 7, 8, 9]);
    expect(page.checkpoints).toEqual([checkpoints[0]]);
    expect((await org.request('get', '/v1/audit?limit=5').expect(200)).body).not.toHaveProperty('checkpoints');
    const csv = (await org.request('get', '/v1/audit?format=csv&checkpoints=true').expect(200)).text.trim().split('\n');
    const types = csv.slice(1).map((line) => line.split(',')[2]);
    expect(types.filter((type) => type === 'audit.checkpoint')).toHaveLength(2);
    expect(csv[6]!.startsWith('5,')).toBe(true);
    expect(csv[6]).toContain('audit.checkpoint');
  });

  it('signs a chain that grew after AUDIT_CHECKPOINT_SECONDS even short of the count, and pages by seq', async () => {
    const { env, org } = await setUp(newKey().env, { AUDIT_CHECKPOINT_SECONDS: '1', AUDIT_CHECKPOINT_EVERY: '1000' });
    await runWorker(env, ['outbox-relay', 'maintenance']);
    await createApprovals(org, 2);
    // The head (seq 3) is signed within the interval, though 3 is far short of AUDIT_CHECKPOINT_EVERY.
    await eventually(async () => (await checkpointsOf(org)).some((c) => c.seq === 3));
    await createApprovals(org, 1);
    await eventually(async () => (await checkpointsOf(org)).some((c) => c.seq === 4));
    expect(
      (await org.request('get', '/v1/audit/checkpoints?after=3&limit=1').expect(200)).body.checkpoints.map((c: Checkpoint) => c.seq),
    ).toEqual([4]);
    await org.request('get', '/v1/audit/checkpoints?limit=0').expect(422);
    await org.request('get', '/v1/audit/checkpoints?from=x').expect(422);
    const writer = await env.createKey(org.orgId, ['approvals:write']);
    await env.http.get('/v1/audit/checkpoints').set('authorization', `Bearer ${writer.key}`).expect(403);
    // Another organization sees only its own.
    const other = await env.createOrg();
    expect(await checkpointsOf(other)).toEqual([]);
  });

  it('catches a chain rewritten consistently, hashes and head included, at the first signed checkpoint it contradicts', async () => {
    const { env, org } = await setUp(newKey().env);
    await runWorker(env, ['outbox-relay', 'audit-checkpoints']);
    await createApprovals(org, 11);
    // What the organization kept of its checkpoints (by webhook, or listed) before the rewrite.
    const kept = await eventually(async () => {
      const listed = await checkpointsOf(org);
      return listed.length === 2 ? listed : null;
    });

    // The attacker edits event 3 and recomputes every later hash and the head, as the contract's formula says.
    await env.services.sql.query(null, `UPDATE audit_events SET data = replace(data, '"a1"', '"a9"') WHERE org_id = $1 AND seq = 3`, [
      org.orgId,
    ]);
    await env.services.sql.query(
      null,
      `DO $$
       DECLARE r record; v_prev text;
       BEGIN
         SELECT hash INTO v_prev FROM audit_events WHERE org_id = '${org.orgId}' AND seq = 2;
         FOR r IN SELECT seq FROM audit_events WHERE org_id = '${org.orgId}' AND seq >= 3 ORDER BY seq LOOP
           UPDATE audit_events SET prev_hash = v_prev,
             hash = ag_audit_hash(v_prev, ag_audit_canonical(seq, type, actor, data, created_at))
           WHERE org_id = '${org.orgId}' AND seq = r.seq RETURNING hash INTO v_prev;
         END LOOP;
         UPDATE audit_chain_heads SET hash = v_prev WHERE org_id = '${org.orgId}';
       END $$`,
      [],
    );
    // The chain alone is consistent again...
    const [chainOnly] = await env.services.sql.query<{ broken_at: string | null }>(
      null,
      'SELECT broken_at FROM ag_verify_audit_range($1, 1, 12, NULL)',
      [org.orgId],
    );
    expect(chainOnly!.broken_at).toBeNull();
    // ...but it contradicts the checkpoint signed at seq 5.
    const verification = (await org.request('get', '/v1/audit?verify=true&limit=1').expect(200)).body.verification;
    expect(verification).toMatchObject({ intact: false, brokenAtSeq: 5, checkpoints: 2 });

    // The offline verifier says the same from the rewritten export and the checkpoints kept before.
    const files = await exportFiles(env, org, kept);
    expect((await runVerifier(files.csv)).code).toBe(0);
    const withKeptCheckpoints = await runVerifier(files.csv, '--public-key', files.publicKey, '--checkpoints', files.checkpoints);
    expect(withKeptCheckpoints).toMatchObject({
      code: 1,
      stdout: expect.stringMatching(/^BROKEN at seq 5: the chain contradicts the checkpoint signed at seq 5/),
    });
  });

  it('lets the offline verifier hold an untouched export to its checkpoints, given the keys or the public key', async () => {
    const { env, org } = await setUp(newKey().env);
    await runWorker(env, ['outbox-relay', 'audit-checkpoints']);
    await createApprovals(org, 11);
    const checkpoints = await eventually(async () => {
      const listed = await checkpointsOf(org);
      return listed.length === 2 ? listed : null;
    });
    const files = await exportFiles(env, org, checkpoints);
    expect(await runVerifier(files.csv, '--public-key', files.publicKey, '--checkpoints', files.checkpoints)).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('2 signed checkpoints hold'),
    });
    // Checkpoints inside the export (CSV rows, or a JSON page's), held to GET /v1/audit/keys.
    expect(await runVerifier(files.csvWithCheckpoints, '--keys', files.keys)).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('2 signed'),
    });
    expect(await runVerifier(files.jsonWithCheckpoints, '--keys', files.keys)).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('2 signed'),
    });
    // Checkpoints without a key to check them by are a usage error; a checkpoint by another key is a break.
    expect((await runVerifier(files.csvWithCheckpoints)).code).toBe(2);
    const stranger = await writeScratch(
      'stranger.pem',
      createPublicKey(newKey().privateKey).export({ type: 'spki', format: 'pem' }).toString(),
    );
    expect(await runVerifier(files.csv, '--public-key', stranger, '--checkpoints', files.checkpoints)).toMatchObject({
      code: 1,
      stdout: expect.stringMatching(/^BROKEN at seq 5: the checkpoint at seq 5 signed by an unknown key/),
    });
  });

  it('refuses forged checkpoints: wrong key, altered seq or hash', async () => {
    const { env, org } = await setUp(newKey().env);
    await runWorker(env, ['outbox-relay', 'audit-checkpoints']);
    await createApprovals(org, 4);
    const [real] = await eventually(async () => {
      const listed = await checkpointsOf(org);
      return listed.length === 1 ? listed : null;
    });
    const stranger = newKey();
    const chain = await readChain(env.services.db, org.orgId);
    const forge = async (changes: Partial<Checkpoint>, signer: KeyObject | null) => {
      const claim = { ...real!, ...changes };
      const { orgId, seq, hash, createdAt, keyId } = claim;
      const signature = signer
        ? sign(null, Buffer.from(jcs({ orgId, seq, hash, createdAt, keyId })), signer).toString('base64')
        : real!.signature;
      await env.services.sql.query(null, 'DELETE FROM audit_checkpoints WHERE org_id = $1', [org.orgId]);
      await env.services.sql.query(
        null,
        'INSERT INTO audit_checkpoints (org_id, seq, hash, created_at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)',
        [orgId, seq, hash, createdAt, keyId, signature],
      );
      return (await org.request('get', '/v1/audit?verify=true&limit=1').expect(200)).body.verification;
    };
    // Signed by another key claiming the real key's id; a seq moved onto another event; a hash changed.
    expect(await forge({}, stranger.privateKey)).toMatchObject({ intact: false, brokenAtSeq: 5 });
    expect(await forge({ seq: 4, hash: chain[3]!.hash }, null)).toMatchObject({ intact: false, brokenAtSeq: 4 });
    expect(await forge({ hash: 'f'.repeat(64) }, null)).toMatchObject({ intact: false, brokenAtSeq: 5 });
    expect(await forge({}, null)).toMatchObject({ intact: true, checkpoints: 1 });
  });

  it('keeps verifying what a retired key signed, and refuses what it signed after its retirement', async () => {
    const oldKey = newKey();
    const { env, org } = await setUp(oldKey.env);
    await runWorker(env, ['outbox-relay', 'audit-checkpoints']);
    await createApprovals(org, 4);
    await eventually(async () => (await checkpointsOf(org)).length === 1);

    // The operator rotates: a process with the new key signs, and the old key is retired.
    const newer = newKey();
    const rotated = await createServices({ ...env.config, AUDIT_SIGNING_KEY: newer.env }, env.services.logger, 'worker');
    cleanups.push(() => rotated.close());
    await createApprovals(org, 3);
    const signed = await rotated.checkpoints.checkpoint(org.orgId);
    const keys = (await env.http.get('/v1/audit/keys').expect(200)).body.keys as { keyId: string; retiredAt: string | null }[];
    expect(keys).toHaveLength(2);
    expect(keys.find((k) => k.keyId !== signed!.keyId)!.retiredAt).not.toBeNull();
    expect(keys.find((k) => k.keyId === signed!.keyId)!.retiredAt).toBeNull();
    expect((await org.request('get', '/v1/audit?verify=true&limit=1').expect(200)).body.verification).toMatchObject({
      intact: true,
      checkpoints: 2,
    });

    // The old key, stolen, signs a checkpoint dated after its retirement: refused.
    const chain = await readChain(env.services.db, org.orgId);
    const oldKeyId = keys.find((k) => k.retiredAt !== null)!.keyId;
    const claim = { orgId: org.orgId, seq: 6, hash: chain[5]!.hash, createdAt: new Date().toISOString(), keyId: oldKeyId };
    const signature = sign(null, Buffer.from(jcs(claim)), oldKey.privateKey).toString('base64');
    await env.services.sql.query(
      null,
      'INSERT INTO audit_checkpoints (org_id, seq, hash, created_at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)',
      [claim.orgId, claim.seq, claim.hash, claim.createdAt, claim.keyId, signature],
    );
    expect((await org.request('get', '/v1/audit?verify=true&limit=1').expect(200)).body.verification).toMatchObject({
      intact: false,
      brokenAtSeq: 6,
    });

    // Going back to a retired key is refused rather than letting it sign into the past.
    const back = await createServices({ ...env.config, AUDIT_SIGNING_KEY: oldKey.env }, env.services.logger, 'worker');
    cleanups.push(() => back.close());
    await expect(back.checkpoints.checkpoint(org.orgId)).rejects.toThrow(/retired/);
  });

  it('delivers each checkpoint as an audit.checkpoint webhook the receiver helper verifies', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const { env, org } = await setUp(newKey().env, { WEBHOOK_BACKOFF_SCALE: '0.001' });
    const endpoint = await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/checkpoints'), events: ['audit.checkpoint'] })
      .expect(201);
    await runWorker(env, ['outbox-relay', 'audit-checkpoints', 'webhook-delivery']);
    await createApprovals(org, 9);
    const deliveries = await receiver.waitFor((received) => received.length >= 2);
    const [listed] = [await checkpointsOf(org)];
    for (const delivery of deliveries) {
      const event = verifyWebhook({ rawBody: delivery.rawBody, headers: delivery.headers, secret: endpoint.body.secret }) as unknown as {
        type: string;
        data: Checkpoint;
      };
      expect(event.type).toBe('audit.checkpoint');
      expect(listed).toContainEqual(event.data);
    }
  });

  it('delivers the checkpoint webhook at least once when the worker is killed mid-way', async () => {
    const receiver = await startReceiver();
    cleanups.push(() => receiver.close());
    const key = newKey();
    const { env, org } = await setUp(key.env, { WEBHOOK_BACKOFF_SCALE: '0.001' });
    const endpoint = await org
      .request('post', '/v1/webhooks')
      .send({ url: receiver.url('/checkpoints'), events: ['audit.checkpoint'] })
      .expect(201);
    const roles = ['outbox-relay', 'audit-checkpoints', 'webhook-delivery'];
    const workerEnv = { AUDIT_SIGNING_KEY: key.env, AUDIT_CHECKPOINT_EVERY: '5', WEBHOOK_BACKOFF_SCALE: '0.001' };
    const first = await spawnWorker(env, cleanups, roles, workerEnv);
    await createApprovals(org, 14);
    first.kill('SIGKILL');
    await once(first, 'exit');
    await spawnWorker(env, cleanups, roles, workerEnv);

    const seqs = await eventually(async () => {
      const received = new Set(
        receiver
          .at('/checkpoints')
          .map((delivery) => verifyWebhook({ rawBody: delivery.rawBody, headers: delivery.headers, secret: endpoint.body.secret }))
          .map((event) => (event.data as unknown as Checkpoint).seq),
      );
      return received.size === 3 ? [...received].sort((a, b) => a - b) : null;
    }, 20_000);
    expect(seqs).toEqual([5, 10, 15]);
  }, 120_000);

  it('npm run cli -- audit:keygen makes a key the service accepts', async () => {
    const env = await createTestEnv();
    cleanups.push(() => env.close());
    const made = (await runCli(['audit:keygen'], env.services, { publicUrl: env.config.PUBLIC_URL })) as {
      keyId: string;
      privateKey: string;
    };
    const { env: withKey, org } = await setUp(made.privateKey);
    await createApprovals(org, 1);
    expect((await withKey.services.checkpoints.checkpoint(org.orgId))!.keyId).toBe(made.keyId);
    await expect(createTestEnv({ AUDIT_SIGNING_KEY: 'not a key' })).rejects.toThrow(/AUDIT_SIGNING_KEY/);
  });
});
