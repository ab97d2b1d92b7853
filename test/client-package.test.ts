import { execFile as execFileCallback } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cp, mkdir, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const execFile = promisify(execFileCallback);

/**
 * A project of someone else's, outside the repository, that installs the packed tarball as any
 * user would. It is kept between runs (with its own npm cache), so that a repeat run installs
 * only the new tarball; the package's dependencies are already there.
 */
const consumerDir = path.join(tmpdir(), 'approval-gate-client-consumer');
/**
 * `npm pack` runs in a copy of the working tree: its prepare and prepack scripts regenerate
 * src/generated and dist/, which the test files running beside this one import and serve.
 */
const packDir = path.join(tmpdir(), 'approval-gate-client-pack');
const npmCache = path.join(tmpdir(), 'approval-gate-client-npm-cache');
const repoRoot = path.resolve(import.meta.dirname, '..');
const typesNodeVersion = (
  JSON.parse(readFileSync(path.join(repoRoot, 'node_modules/@types/node/package.json'), 'utf8')) as { version: string }
).version;

let env: TestEnv;
let org: TestOrg;
let packedFiles: string[];

useTestEnv((created) => ({ env, org } = created));

const npm = (args: string[], cwd: string) =>
  execFile('npm', [...args, '--no-audit', '--no-fund', '--cache', npmCache], { cwd, maxBuffer: 64 * 1024 * 1024 });

beforeAll(async () => {
  await mkdir(consumerDir, { recursive: true });
  for (const file of await readdir(consumerDir)) if (file.endsWith('.tgz')) await rm(path.join(consumerDir, file));
  await rm(packDir, { recursive: true, force: true });
  // As a clone after `npm install` is: with its generated Prisma client, which prepack's build needs.
  const notCopied = new Set(['.git', 'node_modules', 'dist'].map((name) => path.sep + name));
  await cp(repoRoot, packDir, { recursive: true, filter: (source) => ![...notCopied].some((name) => source.endsWith(name)) });
  await symlink(path.join(repoRoot, 'node_modules'), path.join(packDir, 'node_modules'));
  // `npm pack` builds the package itself (prepare, then prepack: npm run build).
  await npm(['pack', '--pack-destination', consumerDir], packDir);
  const tarball = (await readdir(consumerDir)).find((file) => file.endsWith('.tgz'))!;
  packedFiles = (await execFile('tar', ['-tzf', path.join(consumerDir, tarball)])).stdout.trim().split('\n');

  await writeFile(path.join(consumerDir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await npm(['install', '--prefer-offline', `./${tarball}`, `@types/node@${typesNodeVersion}`], consumerDir);
}, 600_000);

describe('the packed package, installed into another project', () => {
  it('holds the built client, the MCP server and their declarations, and nothing of the source or the service', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/dist/src/client/index.js',
        'package/dist/src/client/index.d.ts',
        'package/dist/src/mcp/main.js',
        'package/dist/src/modules/webhooks/verify-webhook.js',
      ]),
    );
    expect(packedFiles.filter((file) => !/^package\/(dist\/src\/.+\.(js|d\.ts)|package\.json|README\.md)$/.test(file))).toEqual([]);
    expect(packedFiles.filter((file) => /\/(server|services|dev)\.js$|\/console\/|\/generated\//.test(file))).toEqual([]);
  });

  it('is imported from plain Node ESM and asks the real service', async () => {
    await writeFile(
      path.join(consumerDir, 'ask.mjs'),
      `import { createApprovalGateClient, ApiError, verifyWebhook } from 'approval-gate/client';
const gate = createApprovalGateClient({ baseUrl: process.env.APPROVAL_GATE_URL, apiKey: process.env.APPROVAL_GATE_API_KEY });
const approval = await gate.requestApproval({ action: 'from-a-package', payload: { n: 1 }, policyKey: 'review' }, { wait: 0 });
const refused = await gate.getApproval('not-a-uuid').catch((error) => error);
console.log(JSON.stringify({ status: approval.status, apiError: refused instanceof ApiError, code: refused.code, verify: typeof verifyWebhook }));
`,
    );
    const { stdout } = await execFile(process.execPath, ['ask.mjs'], {
      cwd: consumerDir,
      env: { PATH: process.env.PATH, APPROVAL_GATE_URL: env.baseUrl, APPROVAL_GATE_API_KEY: org.key },
    });
    expect(JSON.parse(stdout)).toEqual({ status: 'pending', apiError: true, code: 'not_found', verify: 'function' });
  });

  it('type-checks a TypeScript consumer against its declarations, which are the schemas’ types', async () => {
    await writeFile(
      path.join(consumerDir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    await writeFile(
      path.join(consumerDir, 'consumer.ts'),
      `import { createApprovalGateClient, ApiError, verifyWebhook, type ApprovalView, type ApprovalStatus } from 'approval-gate/client';

const gate = createApprovalGateClient({ baseUrl: 'http://localhost:3000', apiKey: 'ag_example' });

export async function refund(amount: number): Promise<Record<string, unknown> | null> {
  try {
    const approval: ApprovalView = await gate.requestApproval({ action: 'refund', payload: { amount }, policyKey: 'refunds' }, { wait: 600 });
    const status: ApprovalStatus = approval.status;
    return status === 'approved' ? approval.payload : null;
  } catch (error) {
    if (error instanceof ApiError) console.error(error.status, error.code, error.detail, error.errors.map((field) => field.path));
    throw error;
  }
}

export async function misuse(): Promise<void> {
  // @ts-expect-error: the policy key is a string in the approval schema
  await gate.requestApproval({ action: 'refund', payload: {}, policyKey: 42 });
  // @ts-expect-error: a verdict is approved or rejected
  await gate.decide('id', { verdict: 'maybe' });
  const page = await gate.listApprovals({ status: 'pending', limit: '10' });
  // @ts-expect-error: approvals have no field of that name
  page.approvals[0]?.amount;
}

export const event = verifyWebhook({ rawBody: '{}', headers: {}, secret: 'whsec_x' }).type;
`,
    );
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await execFile(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumerDir }).catch(
      (error: { stdout: string; code: number }) => error,
    );
    expect(result.stdout).toBe('');
  }, 120_000);

  it('starts its MCP server from the bin the package installs', async () => {
    const client = new Client({ name: 'package-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: path.join(consumerDir, 'node_modules', '.bin', 'approval-gate-mcp'),
        env: { PATH: process.env.PATH ?? '', APPROVAL_GATE_URL: env.baseUrl, APPROVAL_GATE_API_KEY: org.key },
        stderr: 'pipe',
      }),
    );
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
        'get_approval',
        'list_approvals',
        'request_approval',
        'revise_approval',
      ]);
    } finally {
      await client.close();
    }
  });
});
