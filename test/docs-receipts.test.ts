import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

/**
 * The two examples of docs/receipts.md, run as a reader would copy them: the executor that refuses
 * a payload its receipt does not approve, and a third party's check of the log from two
 * checkpoints and the proofs alone.
 */
const DOC = path.resolve(import.meta.dirname, '../docs/receipts.md');
const CLIENT = path.resolve(import.meta.dirname, '../src/client/index.ts');

async function block(language: string, file: string): Promise<string> {
  const markdown = await readFile(DOC, 'utf8');
  const found = [...markdown.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].find(
    ([, lang, code]) => lang === language && code!.split('\n')[0]!.includes(file),
  );
  if (!found) throw new Error(`docs/receipts.md has no ${language} block starting with ${file}`);
  return found[2]!;
}

let env: TestEnv;
let org: TestOrg;
let directory: string;

beforeAll(async () => {
  const key = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
  env = await createTestEnv({ AUDIT_SIGNING_KEY: key, AUDIT_CHECKPOINT_EVERY: '1000' });
  org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  directory = await mkdtemp(path.join(tmpdir(), 'ag-docs-receipts-'));
}, 60_000);
afterAll(() => env?.close());

const save = async (name: string, value: unknown) => {
  const file = path.join(directory, name);
  await writeFile(file, JSON.stringify(value));
  return file;
};

async function approve(payload: Record<string, unknown>) {
  const created = (await org.request('post', '/v1/approvals').send({ action: 'refund', payload, policyKey: 'refunds' }).expect(201)).body;
  return (await org.asReviewer('post', `/v1/approvals/${created.id}/decision`).send({ verdict: 'approved' }).expect(200)).body;
}

describe('docs/receipts.md', () => {
  it('the executor runs the approved payload, in any key order, and refuses any other', async () => {
    // .mts: ESM, as executor.mjs is, so that the client's ESM-only dependencies load.
    const executor = path.join(directory, 'executor.mts');
    await writeFile(executor, (await block('js', 'executor.mjs')).replace(`'approval-gate/client'`, JSON.stringify(CLIENT)));
    const approval = await save('approval.json', await approve({ amount: 50, currency: 'EUR' }));
    const keys = await save('keys.json', (await env.http.get('/v1/audit/keys').expect(200)).body);
    const run = async (payload: unknown) =>
      spawnSync(process.execPath, ['--import', 'tsx', executor, approval, keys, await save('payload.json', payload)], { encoding: 'utf8' });

    expect((await run({ amount: 50, currency: 'EUR' })).stdout).toMatch(/^executing refund/);
    expect((await run({ currency: 'EUR', amount: 50 })).status).toBe(0);
    const refused = await run({ amount: 5000, currency: 'EUR' });
    expect(refused.status).toBe(1);
    expect(refused.stdout).toMatch(/^refused: receipt refused: the payload's hash .* is not the approved payloadHash/);
  }, 60_000);

  it("the third party's check passes on the service's files and fails on a rewritten log", async () => {
    const script = path.join(directory, 'check_log.py');
    await writeFile(script, await block('python', 'check_log.py'));
    await approve({ amount: 1 });
    const old = await env.services.checkpoints.checkpoint(org.orgId);
    const approval = await approve({ amount: 2 });
    await approve({ amount: 3 });
    const fresh = await env.services.checkpoints.checkpoint(org.orgId);
    const seq = approval.receipt.receipt.seq as number;
    const get = async (url: string) => (await org.request('get', url).expect(200)).body;
    const files = {
      keys: await save('keys.json', (await env.http.get('/v1/audit/keys').expect(200)).body),
      old: await save('old.json', old),
      fresh: await save('new.json', fresh),
      consistency: await save('consistency.json', await get(`/v1/audit/proofs/consistency?from=${old!.seq}&to=${fresh!.seq}`)),
      receipt: await save('receipt.json', approval.receipt),
      event: await save('event.json', (await get(`/v1/audit?after=${seq - 1}&limit=1`)).events[0]),
      inclusion: await save('inclusion.json', await get(`/v1/audit/proofs/inclusion?seq=${seq}&treeSize=${fresh!.seq}`)),
    };
    const check = (consistency = files.consistency) =>
      spawnSync('python3', [script, files.keys, files.old, files.fresh, consistency, files.receipt, files.event, files.inclusion], {
        encoding: 'utf8',
        env: { ...process.env, PYTHONPATH: path.resolve(import.meta.dirname, '../clients/python') },
      });
    const passed = check();
    expect(passed.stderr).toBe('');
    expect(passed.stdout).toMatch(
      new RegExp(`grew from ${old!.seq} to ${fresh!.seq} events; approval ${approval.id} approved at seq ${seq} is in it`),
    );

    const rewritten = check(await save('forged-consistency.json', { hashes: ['00'.repeat(32)] }));
    expect(rewritten.status).not.toBe(0);
    expect(rewritten.stderr).toMatch(/the log was rewritten/);
  }, 60_000);
});
