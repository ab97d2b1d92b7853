import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

/** The Python chain verifier of docs/audit.md, run as written there against a real export. */

let env: TestEnv;
let org: TestOrg;
let directory: string;

useTestEnv((created) => ({ env, org } = created));

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'docs-audit-'));
  const markdown = await readFile(path.resolve(import.meta.dirname, '../docs/audit.md'), 'utf8');
  const block = [...markdown.matchAll(/^```python\n([\s\S]*?)^```$/gm)].find(([, code]) => code!.startsWith('# verify_chain.py'));
  if (!block) throw new Error('docs/audit.md has no python block starting with # verify_chain.py');
  await writeFile(path.join(directory, 'verify_chain.py'), block[1]!);
});
afterAll(() => rm(directory, { recursive: true, force: true }));

const verify = async (csv: string) => {
  await writeFile(path.join(directory, 'export.csv'), csv);
  const run = spawnSync('python3', [path.join(directory, 'verify_chain.py'), path.join(directory, 'export.csv')], { encoding: 'utf8' });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}`.trim() };
};

describe('the Python verifier of docs/audit.md', () => {
  it('finds a real export intact, with the head hash the service reports, and names the seq of an edit or a deletion', async () => {
    await org
      .request('put', '/v1/policies/refunds')
      .send({ rules: [{ when: 'payload.amount <= 100', outcome: 'allow' }] })
      .expect(200);
    await org
      .request('post', '/v1/approvals')
      .send({
        action: 'refund',
        payload: { amount: 99.5, note: 'café ☕, "quoted", a,b', nested: { list: [1, true, null] } },
        policyKey: 'refunds',
      })
      .expect(200);
    const pending = await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 250 }, policyKey: 'refunds' })
      .expect(201);
    await org
      .asReviewer('post', `/v1/approvals/${pending.body.id}/decision`)
      .send({ verdict: 'rejected', feedback: 'Too much' })
      .expect(200);

    const csv = (await org.request('get', '/v1/audit?format=csv').expect(200)).text;
    const { verification } = (await org.request('get', '/v1/audit?verify=true').expect(200)).body;
    const events = csv.trimEnd().split('\n').length - 1;
    expect(await verify(csv)).toEqual({ status: 0, output: `intact: ${events} events, head hash ${verification.headHash}` });

    const lines = csv.split('\n');
    const target = lines.findIndex((line) => line.includes('""amount"":250'));
    const edited = lines.map((line, index) => (index === target ? line.replace('""amount"":250', '""amount"":25') : line));
    expect(await verify(edited.join('\n'))).toEqual({ status: 1, output: `BROKEN at seq ${lines[target]!.split(',')[0]}` });

    const deleted = lines.filter((_, index) => index !== 2);
    expect(await verify(deleted.join('\n'))).toEqual({ status: 1, output: 'BROKEN at seq 2' });
  });
});
