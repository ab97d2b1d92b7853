import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerRuntime, type WorkerRuntime } from '../workers/worker-runtime.js';
import { runVerifier } from './support/verifier.js';
import { createTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let worker: WorkerRuntime;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ag-audit-verify-'));
  env = await createTestEnv({ EXPORT_DIR: path.join(dir, 'exports') });
  worker = await startWorkerRuntime(env.services, ['audit-export']);
});

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await rm(dir, { recursive: true, force: true });
});

/** policy.updated (seq 1), then approval.created + approval.approved per approval: 1 + 2 * count events. */
async function orgWithChain(approvals = 4): Promise<TestOrg> {
  const org = await env.createOrg();
  await org
    .request('put', '/v1/policies/p')
    .send({ rules: [{ when: 'true', outcome: 'allow' }] })
    .expect(200);
  for (let i = 0; i < approvals; i++) {
    await org
      .request('post', '/v1/approvals')
      .send({ action: `pay-${i}`, payload: { i }, policyKey: 'p' })
      .expect(200);
  }
  return org;
}

async function verification(org: TestOrg) {
  return (await org.request('get', '/v1/audit').query({ verify: true, limit: 1 }).expect(200)).body.verification;
}

/** Downloads a bulk export of the whole chain and the GET /v1/audit page, as an auditor would keep them. */
async function downloadExports(org: TestOrg, name: string, selection: Record<string, string> = {}) {
  const created = await org.request('post', '/v1/audit/exports').send(selection).expect(202);
  let status = created.body;
  while (status.status !== 'completed') {
    expect(status.status).not.toBe('failed');
    await new Promise((resolve) => setTimeout(resolve, 50));
    status = (await org.request('get', `/v1/audit/exports/${created.body.id}`).expect(200)).body;
  }
  const csv = path.join(dir, `${name}.csv`);
  const json = path.join(dir, `${name}.json`);
  await writeFile(csv, (await org.request('get', status.downloadPath).expect(200)).text);
  await writeFile(
    json,
    JSON.stringify(
      (
        await org
          .request('get', '/v1/audit')
          .query({ limit: 1000, ...selection })
          .expect(200)
      ).body,
    ),
  );
  return { csv, json };
}

const sql = (statement: string, org: TestOrg) => env.services.db.$executeRawUnsafe(statement, org.orgId);

describe('tampering', () => {
  const tamperings: [string, string, number][] = [
    ['a changed event', `UPDATE audit_events SET data = replace(data, 'pay-1', 'pay-9') WHERE org_id = $1::uuid AND seq = 4`, 4],
    ['a deleted event', `DELETE FROM audit_events WHERE org_id = $1::uuid AND seq = 5`, 5],
    [
      'two swapped hashes',
      `UPDATE audit_events e SET hash = o.hash FROM audit_events o
       WHERE e.org_id = $1::uuid AND o.org_id = e.org_id AND ((e.seq = 2 AND o.seq = 3) OR (e.seq = 3 AND o.seq = 2))`,
      2,
    ],
  ];

  it.each(tamperings)('detects %s with verify=true and with the verifier script', async (name, statement, seq) => {
    const org = await orgWithChain();
    expect(await sql(statement, org)).toBeGreaterThan(0);
    expect(await verification(org)).toMatchObject({ intact: false, brokenAtSeq: seq });

    const files = await downloadExports(org, name.replaceAll(' ', '-'));
    for (const file of [files.csv, files.json]) {
      const result = await runVerifier(file);
      expect(result.code, `${file}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stdout).toMatch(new RegExp(`^BROKEN at seq ${seq}:`));
    }
  });

  it('detects the newest event deleted, or rewritten with a recomputed hash, against the chain head', async () => {
    const deleted = await orgWithChain(2);
    await sql('DELETE FROM audit_events WHERE org_id = $1::uuid AND seq = 5', deleted);
    expect(await verification(deleted)).toMatchObject({ intact: false, count: 4, brokenAtSeq: 5 });

    const rewritten = await orgWithChain(2);
    await sql(`UPDATE audit_events SET data = replace(data, 'pay-1', 'pay-9') WHERE org_id = $1::uuid AND seq = 5`, rewritten);
    await sql(
      `UPDATE audit_events SET hash = ag_audit_hash(prev_hash, ag_audit_canonical(seq, type, actor, data, created_at))
       WHERE org_id = $1::uuid AND seq = 5`,
      rewritten,
    );
    expect(await verification(rewritten)).toMatchObject({ intact: false, count: 5, brokenAtSeq: 5 });
  });
});

describe('npm run audit:verify', () => {
  it('passes an intact export, in CSV and JSON, and names the range', async () => {
    const org = await orgWithChain();
    expect(await verification(org)).toMatchObject({ intact: true, count: 9, brokenAtSeq: null });
    const files = await downloadExports(org, 'intact');
    for (const file of [files.csv, files.json]) {
      const result = await runVerifier(file);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^intact: 9 events, seq 1-9, head hash [0-9a-f]{64}/);
    }
  });

  it('checks a filtered export with --partial, and refuses it as a whole chain', async () => {
    const org = await orgWithChain();
    const files = await downloadExports(org, 'filtered', { type: 'approval.approved' });
    expect((await runVerifier('--partial', files.csv)).code).toBe(0);
    expect((await runVerifier('--partial', files.json)).stdout).toMatch(/^intact: 4 events, seq 3-9/);
    const strict = await runVerifier(files.csv);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/^BROKEN at seq 1: seq 1 is missing/);
  });

  it('verifies a payload nested to the limit, and names an event nested deeper (4,000 levels) instead of overflowing', async () => {
    const org = await orgWithChain(0);
    let payload: unknown = { leaf: true };
    for (let level = 1; level < 64; level++) payload = { a: payload };
    await org.request('post', '/v1/approvals').send({ action: 'deep', payload, policyKey: 'p' }).expect(200);
    const files = await downloadExports(org, 'deep');
    for (const file of [files.csv, files.json]) expect((await runVerifier(file)).stdout).toMatch(/^intact: 3 events/);

    const page = JSON.parse(await readFile(files.json, 'utf8')) as { events: { data: unknown }[] };
    const forged = path.join(dir, 'forged-deep.json');
    await writeFile(
      forged,
      JSON.stringify(page).replace(JSON.stringify(page.events[1]!.data), `${'{"a":'.repeat(4000)}1${'}'.repeat(4000)}`),
    );
    const result = await runVerifier(forged);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^BROKEN at seq 2: the event nests deeper than 66 levels, which the service never writes/);
  });

  it('exits 2 on a usage error or an unreadable file', async () => {
    const notCsv = path.join(dir, 'not-an-export.csv');
    await writeFile(notCsv, 'a,b\n1,2\n');
    const notJson = path.join(dir, 'not-an-export.json');
    await writeFile(notJson, '{"rows": []}');
    for (const args of [[], ['a.csv', 'b.csv'], [path.join(dir, 'missing.csv')], [notCsv], [notJson]]) {
      const result = await runVerifier(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).not.toBe('');
    }
  });
});
