import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertApproved, createApprovalGateClient, ReceiptError, verifyReceipt, type SignedReceipt } from '../src/client/index.js';
import { APPROVAL_WEBHOOK_TYPES, canonicalJson } from '../src/modules/audit/audit-events.js';
import { leafHash, nodeHash, rootFromInclusion, verifyConsistency } from '../src/modules/audit/merkle.js';
import { openCheckpointNote } from '../src/modules/audit/signed-note.js';
import type { PublishedKey } from '../src/modules/audit/checkpoint-signing.js';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { readChain } from './support/audit-chain.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';
import { runVerifier } from './support/verifier.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

const signingKey = generateKeyPairSync('ed25519').privateKey;

let env: TestEnv;
let org: TestOrg;
let worker: WorkerRuntime;
let receiver: Receiver;
let keys: PublishedKey[];
let scratch: string;

beforeAll(async () => {
  receiver = await startReceiver();
  env = await createTestEnv({
    AUDIT_SIGNING_KEY: signingKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    AUDIT_CHECKPOINT_EVERY: '1000',
    OUTBOX_POLL_INTERVAL_MS: '100',
    EXPIRY_SWEEP_INTERVAL_MS: '300',
    WEBHOOK_BACKOFF_SCALE: '0.001',
  });
  worker = await startWorkerRuntime(env.services, ['approval-expiry', 'outbox-relay', 'webhook-delivery']);
  org = await env.createOrg();
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  await org
    .request('put', '/v1/policies/allow')
    .send({ rules: [{ when: 'true', outcome: 'allow' }] })
    .expect(200);
  await org.request('put', '/v1/policies/short').send({ timeoutSeconds: 1 }).expect(200);
  await org.request('put', '/v1/policies/hand-over').send({ timeoutSeconds: 1, onTimeout: 'escalate', escalateTo: 'review' }).expect(200);
  await org
    .request('post', '/v1/webhooks')
    .send({ url: receiver.url('/hooks'), events: [...APPROVAL_WEBHOOK_TYPES] })
    .expect(201);
  // The key is published once the service first signs.
  await org.request('post', '/v1/approvals').send({ action: 'warm-up', payload: {}, policyKey: 'allow' }).expect(200);
  keys = (await env.http.get('/v1/audit/keys').expect(200)).body.keys;
  scratch = await mkdtemp(path.join(tmpdir(), 'ag-receipts-'));
}, 60_000);
afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await receiver?.close();
});

interface View {
  id: string;
  status: string;
  payloadHash: string;
  decidedBy: unknown;
  decidedAt: string | null;
  revision: number;
  escalatedTo?: string;
  receipt: SignedReceipt | null;
}

const create = async (policyKey: string, payload: Record<string, unknown> = { amount: 50, currency: 'EUR' }) =>
  (await org.request('post', '/v1/approvals').send({ action: 'refund', payload, policyKey })).body as View;
const decide = async (id: string, body: Record<string, unknown>) =>
  (await org.asReviewer('post', `/v1/approvals/${id}/decision`).send(body).expect(200)).body as View;
const settled = async (id: string) => (await org.request('get', `/v1/approvals/${id}?wait=10`).expect(200)).body as View;
const receiptOf = async (id: string) => (await org.request('get', `/v1/approvals/${id}/receipt`).expect(200)).body as SignedReceipt;

async function writeScratch(name: string, value: unknown): Promise<string> {
  const file = path.join(scratch, name);
  await writeFile(file, JSON.stringify(value));
  return file;
}

/** A receipt signed by another key under the service's key id: what a forger without the key can make. */
function forged(receipt: SignedReceipt['receipt']): SignedReceipt {
  const other = generateKeyPairSync('ed25519').privateKey;
  return { receipt, signature: sign(null, Buffer.from(canonicalJson(receipt)), other).toString('base64') };
}

describe('decision receipts', () => {
  it('signs a receipt at every settlement, the same in the view, the receipt endpoint, the decision and the webhook', async () => {
    const approved = await create('review');
    expect(approved.receipt).toBeNull();
    await org.request('get', `/v1/approvals/${approved.id}/receipt`).expect(404);
    const decided = await decide(approved.id, { verdict: 'approved' });

    const edited = await create('review');
    await decide(edited.id, { verdict: 'approved', editedPayload: { amount: 40, currency: 'EUR' } });
    const rejected = await create('review');
    await decide(rejected.id, { verdict: 'rejected', feedback: 'no' });
    const changes = await create('review');
    await decide(changes.id, { verdict: 'changes_requested', feedback: 'less, please' });
    const allowed = await create('allow');
    const expired = await create('short');
    const escalated = await create('hand-over');

    const cases = [
      { view: decided, status: 'approved', type: 'approval.approved' },
      { view: await settled(edited.id), status: 'approved', type: 'approval.approved' },
      { view: await settled(rejected.id), status: 'rejected', type: 'approval.rejected' },
      { view: await settled(changes.id), status: 'changes_requested', type: 'approval.changes_requested' },
      { view: allowed, status: 'approved', type: 'approval.approved' },
      { view: await settled(expired.id), status: 'expired', type: 'approval.expired' },
      { view: await settled(escalated.id), status: 'escalated', type: 'approval.escalated' },
    ];
    const chain = await readChain(env.services.db, org.orgId);
    for (const { view, status, type } of cases) {
      const fromEndpoint = await receiptOf(view.id);
      expect(view.receipt, status).toEqual(fromEndpoint);
      expect((await settled(view.id)).receipt).toEqual(fromEndpoint);
      const { receipt, signature } = fromEndpoint;
      expect(receipt).toEqual({
        orgId: org.orgId,
        approvalId: view.id,
        revision: view.revision,
        status,
        action: 'refund',
        payloadHash: view.payloadHash,
        decidedBy: view.decidedBy,
        decidedAt: view.decidedAt,
        policyKey: expect.any(String),
        policyVersion: 1, // the policy was PUT once: the version the request was evaluated under
        seq: expect.any(Number),
        keyId: keys[0]!.keyId,
      });
      expect(verifyReceipt(receipt, signature, keys)).toBe(true);
      // The seq is the event that settled it.
      const event = chain.find((candidate) => candidate.seq === receipt.seq)!;
      expect(event).toMatchObject({ type, data: { approvalId: view.id } });
    }
    expect(cases[1]!.view.payloadHash).not.toBe(cases[0]!.view.payloadHash);

    // The webhook of each settlement carries the same receipt, signed as it is delivered.
    const hooks = await receiver.waitFor(
      (received) => cases.every(({ view, type }) => received.some((d) => d.body.type === type && d.body.data.approvalId === view.id)),
      20_000,
    );
    for (const { view, type } of cases) {
      const hook = hooks.find((d) => d.body.type === type && d.body.data.approvalId === view.id)!;
      expect(hook.body.data.receipt).toEqual(await receiptOf(view.id));
    }
    const created = hooks.find((d) => d.body.type === 'approval.orphaned' || d.body.type === 'approval.revised');
    if (created) expect(created.body.data.receipt).toBeNull();
  }, 60_000);

  it('a revision waits for a new receipt; its settlement gets one naming the revision', async () => {
    const first = await create('review');
    await decide(first.id, { verdict: 'changes_requested', feedback: 'halve it' });
    const before = await receiptOf(first.id);
    const revised = (
      await org
        .request('post', `/v1/approvals/${first.id}/revisions`)
        .send({ payload: { amount: 25, currency: 'EUR' } })
        .expect(201)
    ).body as View;
    expect(revised.receipt).toBeNull();
    await org.request('get', `/v1/approvals/${first.id}/receipt`).expect(404);
    await decide(first.id, { verdict: 'approved', revision: 2 });
    const after = await receiptOf(first.id);
    expect(after.receipt).toMatchObject({ revision: 2, status: 'approved', payloadHash: revised.payloadHash });
    expect(after.receipt.seq).toBeGreaterThan(before.receipt.seq);
  });

  it('refuses forged, altered and wrong-key receipts in the client and the offline verifier; binds the payload by its RFC 8785 hash', async () => {
    const payload = { amount: 50, currency: 'EUR', to: { iban: 'DE00 1234' } };
    const view = await create('allow', payload);
    const genuine = view.receipt!;
    const { receipt, signature } = genuine;

    expect(assertApproved(payload, receipt, signature, keys)).toEqual(receipt);
    expect(assertApproved({ to: { iban: 'DE00 1234' }, currency: 'EUR', amount: 50 }, receipt, signature, { keys })).toEqual(receipt);
    expect(() => assertApproved({ ...payload, amount: 5000 }, receipt, signature, keys)).toThrow(ReceiptError);
    expect(() => assertApproved({ ...payload, to: { iban: 'DE00 9999' } }, receipt, signature, keys)).toThrow(/payloadHash/);

    const altered: [string, SignedReceipt][] = [
      ['another payload hash', { receipt: { ...receipt, payloadHash: 'ab'.repeat(32) }, signature }],
      ['another approval', { receipt: { ...receipt, approvalId: (await create('review')).id }, signature }],
      ['another seq', { receipt: { ...receipt, seq: receipt.seq + 1 }, signature }],
      ['forged with another key', forged(receipt)],
      ['an unknown key id', { receipt: { ...receipt, keyId: '0123456789abcdef' }, signature }],
      ['a garbled signature', { receipt, signature: 'AAAA' }],
    ];
    const keysFile = await writeScratch('keys.json', { keys });
    const payloadFile = await writeScratch('payload.json', { currency: 'EUR', to: { iban: 'DE00 1234' }, amount: 50 });
    const ok = await runVerifier('--receipt', await writeScratch('genuine.json', view), '--keys', keysFile, '--payload', payloadFile);
    expect(ok, ok.stderr).toMatchObject({ code: 0 });
    expect(ok.stdout).toMatch(/^valid: receipt of approval/);
    const otherPayload = await runVerifier(
      '--receipt',
      await writeScratch('receipt.json', genuine),
      '--keys',
      keysFile,
      '--payload',
      await writeScratch('other.json', { ...payload, amount: 5000 }),
    );
    expect(otherPayload).toMatchObject({ code: 1, stdout: expect.stringMatching(/^REFUSED: .*payloadHash/) });

    for (const [what, bad] of altered) {
      expect(verifyReceipt(bad.receipt, bad.signature, keys), what).toBe(false);
      expect(() => assertApproved(payload, bad.receipt, bad.signature, keys), what).toThrow(ReceiptError);
    }
    // The offline verifier, a process each: the three kinds of lie (an altered member, another key, an unknown key).
    for (const [what, bad] of altered.filter(([what]) => /payload hash|forged|unknown/.test(what))) {
      const run = await runVerifier('--receipt', await writeScratch(`${what.replaceAll(' ', '-')}.json`, bad), '--keys', keysFile);
      expect(run, what).toMatchObject({ code: 1, stdout: expect.stringMatching(/^REFUSED: /) });
    }

    // A rejection's receipt is genuine, and still no licence to execute.
    const rejected = await create('review');
    await decide(rejected.id, { verdict: 'rejected', feedback: 'no' });
    const refusal = await receiptOf(rejected.id);
    expect(verifyReceipt(refusal.receipt, refusal.signature, keys)).toBe(true);
    expect(() => assertApproved({ amount: 50, currency: 'EUR' }, refusal.receipt, refusal.signature, keys)).toThrow(
      /rejected, not approved/,
    );
    expect(() =>
      assertApproved({ amount: 50, currency: 'EUR' }, { ...refusal.receipt, status: 'approved' }, refusal.signature, keys),
    ).toThrow(/signature/);
  }, 120_000);

  it('requestApproval returns the receipt checked against the published keys, and throws on one altered in transit', async () => {
    const honest = createApprovalGateClient({ baseUrl: env.baseUrl, apiKey: org.key });
    const approval = await honest.requestApproval({ action: 'refund', payload: { amount: 1 }, policyKey: 'allow' }, { wait: 5 });
    expect(verifyReceipt(approval.receipt!.receipt, approval.receipt!.signature, keys)).toBe(true);
    assertApproved({ amount: 1 }, approval.receipt!.receipt, approval.receipt!.signature, keys);

    // In transit, someone makes it say the payload was bigger: view and receipt alike.
    const tampering: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!String(input).includes('/v1/approvals')) return response;
      const body = (await response.json()) as View & { payload: Record<string, unknown> };
      if (body.receipt) {
        body.payload = { amount: 5000 };
        body.payloadHash = 'cd'.repeat(32);
        body.receipt.receipt.payloadHash = body.payloadHash;
      }
      return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
    };
    const fooled = createApprovalGateClient({ baseUrl: env.baseUrl, apiKey: org.key, fetch: tampering });
    await expect(fooled.requestApproval({ action: 'refund', payload: { amount: 1 }, policyKey: 'allow' }, { wait: 5 })).rejects.toThrow(
      ReceiptError,
    );
  });
});

/** The Merkle root of the chain's first `size` events, from the events alone (RFC 6962, recursively). */
function rootOf(eventHashes: string[]): Buffer {
  const mth = (leaves: string[]): Buffer => {
    if (leaves.length === 1) return leafHash(leaves[0]!);
    let k = 1;
    while (k * 2 < leaves.length) k *= 2;
    return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
  };
  return mth(eventHashes);
}

describe('the audit log as a transparency log', () => {
  it('checkpoints carry the tree and a C2SP signed note; inclusion and consistency proofs verify from them alone, in TypeScript and Python', async () => {
    const first = await env.services.checkpoints.checkpoint(org.orgId);
    for (let i = 0; i < 5; i++) await create('review', { i });
    const receiptView = await create('allow', { last: true });
    const second = await env.services.checkpoints.checkpoint(org.orgId);
    const listed = (await org.request('get', '/v1/audit/checkpoints').expect(200)).body.checkpoints as NonNullable<typeof first>[];
    expect(listed).toContainEqual(first);
    expect(listed).toContainEqual(second);

    const chain = await readChain(env.services.db, org.orgId);
    const hashes = chain.map((event) => event.hash);
    for (const checkpoint of [first!, second!]) {
      expect(checkpoint.treeSize).toBe(checkpoint.seq);
      expect(checkpoint.rootHash).toBe(rootOf(hashes.slice(0, checkpoint.seq)).toString('hex'));
      const opened = openCheckpointNote(checkpoint.note!, keys[0]!.publicKey);
      expect(opened).toEqual({
        origin: `${new URL(env.config.PUBLIC_URL).host}/${org.orgId}`,
        treeSize: checkpoint.seq,
        rootHash: checkpoint.rootHash,
      });
      expect(checkpoint.note).toMatch(/^[^\n]+\/[0-9a-f-]{36}\n\d+\n[A-Za-z0-9+/=]{44}\n\n— \S+ [A-Za-z0-9+/=]{92}\n$/);
    }

    // Every event of the newer tree, and the receipt's settling event, proven from the checkpoint alone.
    const size = second!.seq;
    const root = Buffer.from(second!.rootHash!, 'hex');
    for (let seq = 1; seq <= size; seq++) {
      const proof = (await org.request('get', `/v1/audit/proofs/inclusion?seq=${seq}&treeSize=${size}`).expect(200)).body;
      expect(proof).toMatchObject({ leafIndex: seq - 1, treeSize: size });
      const path = (proof.hashes as string[]).map((hash) => Buffer.from(hash, 'hex'));
      expect(rootFromInclusion(seq - 1, size, leafHash(hashes[seq - 1]!), path)?.equals(root), `seq ${seq}`).toBe(true);
    }
    const receiptSeq = receiptView.receipt!.receipt.seq;
    const inclusion = (await org.request('get', `/v1/audit/proofs/inclusion?seq=${receiptSeq}&treeSize=${size}`).expect(200)).body;
    const consistency = (await org.request('get', `/v1/audit/proofs/consistency?from=${first!.seq}&to=${size}`).expect(200)).body;
    expect(
      verifyConsistency(
        first!.seq,
        size,
        Buffer.from(first!.rootHash!, 'hex'),
        root,
        (consistency.hashes as string[]).map((h) => Buffer.from(h, 'hex')),
      ),
    ).toBe(true);

    const script = `
import json, sys
from approval_gate.receipts import open_checkpoint_note, verify_consistency, verify_inclusion, verify_receipt
c = json.load(open(sys.argv[1]))
o1, s1, r1 = open_checkpoint_note(c["first"]["note"], c["key"])
o2, s2, r2 = open_checkpoint_note(c["second"]["note"], c["key"])
print(json.dumps([
  verify_consistency(s1, s2, r1, r2, c["consistency"]["hashes"]),
  verify_inclusion(c["eventHash"], c["inclusion"]["leafIndex"], s2, c["inclusion"]["hashes"], r2),
  verify_receipt(c["receipt"]["receipt"], c["receipt"]["signature"], c["keys"]),
  verify_consistency(s1, s2, r1, "00" * 32, c["consistency"]["hashes"]),
]))`;
    const file = await writeScratch('log.json', {
      first,
      second,
      key: keys[0]!.publicKey,
      keys: { keys },
      consistency,
      inclusion,
      eventHash: hashes[receiptSeq - 1],
      receipt: receiptView.receipt,
    });
    const run = spawnSync('python3', ['-c', script, file], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: path.resolve(import.meta.dirname, '../clients/python') },
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual([true, true, true, false]);
  }, 120_000);

  it('refuses proofs the log cannot give, naming the field', async () => {
    const head = (await readChain(env.services.db, org.orgId)).length;
    const problems = [
      [`/v1/audit/proofs/inclusion?seq=5&treeSize=4`, 'seq'],
      [`/v1/audit/proofs/inclusion?seq=1&treeSize=${head + 10}`, 'treeSize'],
      [`/v1/audit/proofs/inclusion?seq=0&treeSize=4`, 'seq'],
      [`/v1/audit/proofs/inclusion?seq=1.5&treeSize=4`, 'seq'],
      [`/v1/audit/proofs/inclusion?treeSize=4`, 'seq'],
      [`/v1/audit/proofs/consistency?from=5&to=4`, 'from'],
      [`/v1/audit/proofs/consistency?from=1&to=${head + 10}`, 'to'],
      [`/v1/audit/proofs/consistency?from=x&to=4`, 'from'],
    ] as const;
    for (const [url, field] of problems) {
      const response = await org.request('get', url).expect(422);
      expect(response.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(
        response.body.errors.map((error: { path: string }) => error.path),
        url,
      ).toContain(field);
    }
    await env.http.get('/v1/audit/proofs/inclusion?seq=1&treeSize=1').expect(401);
    const reader = await env.createKey(org.orgId, ['approvals:read']);
    await env.http.get('/v1/audit/proofs/consistency?from=1&to=1').set('authorization', `Bearer ${reader.key}`).expect(403);
    const other = await env.createOrg();
    await other.request('get', `/v1/approvals/${(await create('allow')).id}/receipt`).expect(404);
  });

  it('grows the tree by catching up, once, under concurrent callers', async () => {
    const fresh = await env.createOrg();
    await fresh
      .request('put', '/v1/policies/allow')
      .send({ rules: [{ when: 'true', outcome: 'allow' }] })
      .expect(200);
    for (let i = 0; i < 12; i++)
      await fresh.request('post', '/v1/approvals').send({ action: 'x', payload: { i }, policyKey: 'allow' }).expect(200);
    const head = (await readChain(env.services.db, fresh.orgId)).length;
    const sizes = await Promise.all(Array.from({ length: 8 }, () => env.services.auditTree.catchUp(fresh.orgId)));
    expect(sizes).toEqual(sizes.map(() => head));
    const [{ count }] = (await env.services.sql.query<{ count: string }>(
      null,
      'SELECT count(*)::text AS count FROM audit_tree_nodes WHERE org_id = $1',
      [fresh.orgId],
    )) as [{ count: string }];
    // Every complete subtree above the leaves, once: n - popcount(n) of them.
    expect(Number(count)).toBe(head - head.toString(2).replaceAll('0', '').length);
    const root = await env.services.auditTree.root(fresh.orgId, head);
    expect(root.equals(rootOf((await readChain(env.services.db, fresh.orgId)).map((event) => event.hash)))).toBe(true);
  });
});
