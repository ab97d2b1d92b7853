import { execFile as execFileCallback } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalGateClient, type ApprovalView, type DecisionInput } from '../src/client/index.js';
import { eventually } from './support/eventually.js';
import { useTestEnv, type TestEnv } from './support/test-env.js';

const execFile = promisify(execFileCallback);

/**
 * The adapters' examples of docs/agents.md, run as a reader would copy them: each code block is
 * written to a file beside a `model.ts` (the reader's model; here a scripted one that calls
 * `refund` and then says what it read) and run as its own process, against the real service,
 * while a reviewer decides. The packages resolve as in this repository: `@approval-gate/client`
 * from its source (the root tsconfig's paths, which tsx follows).
 */

const repoRoot = path.resolve(import.meta.dirname, '..');
const DOC = path.join(repoRoot, 'docs/agents.md');

/** The fenced `ts` block whose first line names `file`. */
async function codeBlock(file: string): Promise<string> {
  const blocks = [...(await readFile(DOC, 'utf8')).matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)];
  const block = blocks.find(([, language, code]) => language === 'ts' && code!.split('\n')[0]!.includes(file));
  if (!block) throw new Error(`docs/agents.md has no ts block starting with ${file}`);
  return block[2]!;
}

let env: TestEnv;
let scratch: string;

useTestEnv((created) => ({ env } = created));

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'approval-gate-docs-agents-'));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/**
 * Runs the example of `file` in a project of its own (beside `model.ts` exporting `model`), as an
 * organization of its own, and decides its one request as `decision`.
 */
async function runExample(file: string, model: string, decision: DecisionInput): Promise<{ output: string; approval: ApprovalView }> {
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send({}).expect(200);
  const reviewer = createApprovalGateClient({ baseUrl: env.baseUrl, apiKey: org.reviewerKey });
  const project = path.join(scratch, path.basename(file, '.ts'));
  await mkdir(project);
  await symlink(path.join(repoRoot, 'node_modules'), path.join(project, 'node_modules'));
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
  await writeFile(path.join(project, 'model.ts'), model);
  await writeFile(path.join(project, file), await codeBlock(file));
  const running = execFile(process.execPath, ['--import', 'tsx', file], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      APPROVAL_GATE_URL: env.baseUrl,
      APPROVAL_GATE_API_KEY: org.key,
      TSX_TSCONFIG_PATH: path.join(repoRoot, 'tsconfig.json'),
      // No traces sent anywhere: there is no network here.
      OPENAI_AGENTS_DISABLE_TRACING: '1',
    },
  });
  const pending = await Promise.race([
    eventually(async () => {
      const { approvals } = await reviewer.listApprovals({ action: 'refund', status: 'pending' });
      return approvals[0];
    }, 60_000),
    // An example that fails fails the test at once, with its output.
    running.then(({ stdout }) => Promise.reject(new Error(`${file} ended without asking: ${stdout}`))),
  ]);
  const approval = await reviewer.decide(pending.id, decision);
  return { output: (await running).stdout, approval };
}

const scripted = path.join(repoRoot, 'test/support/scripted-models.ts');

describe('the adapters’ examples of docs/agents.md', () => {
  it('the AI SDK’s refunds what the reviewer approved: their edited amount', async () => {
    const { output } = await runExample(
      'refund-ai-sdk.ts',
      `import { scriptedAiModel } from ${JSON.stringify(scripted)};
export const model = scriptedAiModel([{ toolName: 'refund', input: { orderId: 'A-17', amount: 120 } }]);
`,
      { verdict: 'approved', editedPayload: { orderId: 'A-17', amount: 100 } },
    );
    expect(JSON.parse(output)).toEqual([{ type: 'json', value: { refunded: 100, orderId: 'A-17' } }]);
  }, 90_000);

  it('the OpenAI Agents SDK’s tells the model what the reviewer said when they reject', async () => {
    const { output, approval } = await runExample(
      'refund-openai-agents.ts',
      `import { ScriptedAgentsModel } from ${JSON.stringify(scripted)};
export const model = new ScriptedAgentsModel([{ toolName: 'refund', input: { orderId: 'A-17', amount: 120 } }]);
`,
      { verdict: 'rejected', feedback: 'A-17 was refunded last week.' },
    );
    const [read] = JSON.parse(output) as string[];
    expect(JSON.parse(read!)).toMatchObject({
      approved: false,
      approvalId: approval.id,
      status: 'rejected',
      feedback: 'A-17 was refunded last week.',
    });
  }, 90_000);
});
