import { execFile as execFileCallback } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { lstat, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

const execFile = promisify(execFileCallback);

/**
 * The two published packages of the workspace, packed (their prepack scripts build them: the
 * client first, which the MCP server's build reads) and installed from the tarballs into projects
 * of someone else's, outside the repository, as any user would. The npm cache is kept between
 * runs, so that a repeat run downloads nothing.
 */
const scratch = path.join(tmpdir(), 'approval-gate-packages');
const tarballs = path.join(scratch, 'tarballs');
const clientConsumer = path.join(scratch, 'client-consumer');
const mcpConsumer = path.join(scratch, 'mcp-consumer');
const npmCache = path.join(tmpdir(), 'approval-gate-client-npm-cache');
const repoRoot = path.resolve(import.meta.dirname, '..');
const typesNodeVersion = (
  JSON.parse(readFileSync(path.join(repoRoot, 'node_modules/@types/node/package.json'), 'utf8')) as { version: string }
).version;

/** What a consumer's `node_modules` weighs after installing a package, in bytes: the sum of its files' sizes. */
const MAX_CLIENT_INSTALL_BYTES = 5 * 1024 * 1024;

let env: TestEnv;
let org: TestOrg;
const packed: Record<'client' | 'mcp', string[]> = { client: [], mcp: [] };
const installedBytes: Record<'client' | 'mcp', number> = { client: 0, mcp: 0 };

useTestEnv((created) => ({ env, org } = created));

const npm = (args: string[], cwd: string) =>
  execFile('npm', [...args, '--no-audit', '--no-fund', '--cache', npmCache], { cwd, maxBuffer: 64 * 1024 * 1024 });

async function sizeOf(target: string): Promise<number> {
  const stat = await lstat(target);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const entry of await readdir(target)) total += await sizeOf(path.join(target, entry));
  return total;
}

/** A fresh project that installs `specs`; returns its node_modules' size, measured before anything else is added. */
async function consumer(directory: string, specs: string[]): Promise<number> {
  await rm(directory, { recursive: true, force: true });
  await mkdir(directory, { recursive: true });
  await writeFile(path.join(directory, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await npm(['install', '--prefer-offline', ...specs], directory);
  return sizeOf(path.join(directory, 'node_modules'));
}

beforeAll(async () => {
  await rm(tarballs, { recursive: true, force: true });
  await mkdir(tarballs, { recursive: true });
  await npm(['pack', '-w', '@approval-gate/client', '-w', '@approval-gate/mcp', '--pack-destination', tarballs], repoRoot);
  const clientTarball = path.join(tarballs, 'approval-gate-client-0.1.0.tgz');
  const mcpTarball = path.join(tarballs, 'approval-gate-mcp-0.1.0.tgz');
  const list = async (tarball: string) => (await execFile('tar', ['-tzf', tarball])).stdout.trim().split('\n');
  [packed.client, packed.mcp] = await Promise.all([list(clientTarball), list(mcpTarball)]);

  [installedBytes.client, installedBytes.mcp] = await Promise.all([
    consumer(clientConsumer, [clientTarball]),
    // The MCP package's dependency on the client is met by the client's tarball, installed with it.
    consumer(mcpConsumer, [clientTarball, mcpTarball]),
  ]);
  console.info(
    `node_modules after installing: @approval-gate/client ${installedBytes.client} bytes, @approval-gate/mcp ${installedBytes.mcp} bytes`,
  );
  await npm(['install', '--prefer-offline', `@types/node@${typesNodeVersion}`], clientConsumer);
}, 900_000);

describe('@approval-gate/client, packed and installed into another project', () => {
  it('holds the built client and its declarations, none of the service, and installs only canonicalize (RFC 8785, for receipts): its node_modules is under 5 MB', async () => {
    expect(packed.client).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/dist/client/index.js',
        'package/dist/client/index.d.ts',
        'package/dist/client/ai-sdk.js',
        'package/dist/client/openai-agents.js',
        'package/dist/modules/webhooks/verify-webhook.js',
      ]),
    );
    expect(packed.client.filter((file) => !/^package\/(dist\/.+\.(js|d\.ts)|package\.json|README\.md)$/.test(file))).toEqual([]);
    expect(
      packed.client.filter((file) => /\/(server|services|dev|config)\.js$|\/(console|generated|http|db|consumers|jobs)\//.test(file)),
    ).toEqual([]);
    const installed = await readdir(path.join(clientConsumer, 'node_modules'));
    expect(installed).toContain('canonicalize');
    expect(installed).not.toContain('zod');
    expect(installedBytes.client).toBeLessThan(MAX_CLIENT_INSTALL_BYTES);
  });

  it('is imported from plain Node ESM and asks the real service', async () => {
    await writeFile(
      path.join(clientConsumer, 'ask.mjs'),
      `import { createApprovalGateClient, ApiError, verifyWebhook } from '@approval-gate/client';
import { verifyWebhook as verifyAlone } from '@approval-gate/client/verify-webhook';
const gate = createApprovalGateClient({ baseUrl: process.env.APPROVAL_GATE_URL, apiKey: process.env.APPROVAL_GATE_API_KEY });
const approval = await gate.requestApproval({ action: 'from-a-package', payload: { n: 1 }, policyKey: 'review' }, { wait: 0 });
const refused = await gate.getApproval('not-a-uuid').catch((error) => error);
console.log(JSON.stringify({ status: approval.status, apiError: refused instanceof ApiError, code: refused.code, verify: typeof verifyWebhook, same: verifyAlone === verifyWebhook }));
`,
    );
    const { stdout } = await execFile(process.execPath, ['ask.mjs'], {
      cwd: clientConsumer,
      env: { PATH: process.env.PATH, APPROVAL_GATE_URL: env.baseUrl, APPROVAL_GATE_API_KEY: org.key },
    });
    expect(JSON.parse(stdout)).toEqual({ status: 'pending', apiError: true, code: 'not_found', verify: 'function', same: true });
  });

  it('type-checks a TypeScript consumer against its declarations, which are the schemas’ types, without zod', async () => {
    await writeFile(
      path.join(clientConsumer, 'tsconfig.json'),
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
      path.join(clientConsumer, 'consumer.ts'),
      `import { createApprovalGateClient, ApiError, verifyWebhook, type ApprovalView, type ApprovalStatus } from '@approval-gate/client';

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
  // @ts-expect-error: a verdict is approved, rejected or changes_requested
  await gate.decide('id', { verdict: 'maybe' });
  const page = await gate.listApprovals({ status: 'pending', limit: '10' });
  // @ts-expect-error: approvals have no field of that name
  page.approvals[0]?.amount;
}

export const event = verifyWebhook({ rawBody: '{}', headers: {}, secret: 'whsec_x' }).type;
`,
    );
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await execFile(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: clientConsumer }).catch(
      (error: { stdout: string; code: number }) => error,
    );
    expect(result.stdout).toBe('');
  }, 120_000);
});

describe('@approval-gate/mcp, packed and installed into another project', () => {
  it('holds only the built server, and depends on the client, not on the service', () => {
    expect(packed.mcp.sort()).toEqual([
      'package/dist/approval-outcome.js',
      'package/dist/approval-tasks.js',
      'package/dist/approval-tools.js',
      'package/dist/config.js',
      'package/dist/main.js',
      'package/package.json',
    ]);
    const installed = readFileSync(path.join(mcpConsumer, 'node_modules', '@approval-gate', 'mcp', 'package.json'), 'utf8');
    expect(Object.keys((JSON.parse(installed) as { dependencies: object }).dependencies).sort()).toEqual([
      '@approval-gate/client',
      '@modelcontextprotocol/sdk',
      'zod',
    ]);
  });

  it('starts its MCP server from the bin the package installs', async () => {
    const client = new Client({ name: 'package-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: path.join(mcpConsumer, 'node_modules', '.bin', 'approval-gate-mcp'),
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
