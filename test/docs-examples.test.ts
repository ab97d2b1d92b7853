import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeDemo, prepareDemo, type Demo } from '../src/cli/demo-seed.js';
import { startWorkerRuntime, WORKER_ROLES, type WorkerRuntime } from '../workers/worker-runtime.js';
import { docCommands, type DocCommand } from './support/docs-examples.js';
import { createTestEnv, type TestEnv } from './support/test-env.js';

/**
 * Every curl example of the README and docs/, run as written with bash and curl, in order, against
 * a service set up as `npm run dev` sets it up (development, its demo organization and keys), the
 * variables the guide names (`AG`, `ADMIN_KEY`, …) set as `npm run dev` prints them. Each command's
 * status must be the one the guide shows (see docs/development.md, "The guide's examples").
 */

const GUIDES = ['README.md', ...(await readdir('docs')).filter((file) => file.endsWith('.md')).map((file) => `docs/${file}`)];

let env: TestEnv;
let worker: WorkerRuntime;
let demo: Demo;
let scratch: string;

beforeAll(async () => {
  env = await createTestEnv({ NODE_ENV: 'development', OUTBOX_POLL_INTERVAL_MS: '100' });
  worker = await startWorkerRuntime(env.services, WORKER_ROLES);
  scratch = await mkdtemp(path.join(tmpdir(), 'approval-gate-docs-'));
  ({ demo } = await prepareDemo(env.services, path.join(scratch, 'demo.json')));
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await env?.close();
  await rm(scratch, { recursive: true, force: true });
});

/** The variables `npm run dev` prints for the guide, read back from what it prints. */
function printedVariables(): Record<string, string> {
  const banner = describeDemo({ demo, origin: 'created' }, { file: 'demo.json', port: 3000 });
  const line = banner.split('\n').find((text) => text.trim().startsWith('export AG='))!;
  const variables = Object.fromEntries(
    line
      .trim()
      .slice('export '.length)
      .split(' ')
      .map((pair) => pair.split('=') as [string, string]),
  );
  return { ...variables, AG: env.baseUrl };
}

/** curl as written, plus its status on stderr; an event stream is cut after 2 s, as a reader would Ctrl-C it. */
const CURL = `curl() {
  local limit=()
  case " $* " in *" -sN "*) limit=(--max-time 2) ;; esac
  command curl "\${limit[@]}" -w '%{stderr}@@status %{http_code}\\n' "$@"
}`;

/** What an example's answer makes available to the next ones, as the guide names it. */
function captures(command: string, body: unknown): Record<string, string> {
  if (typeof body !== 'object' || body === null) return {};
  const answer = body as Record<string, any>;
  const method = /-X\s+(\w+)/.exec(command)?.[1] ?? (/\s-d\s/.test(command) ? 'POST' : 'GET');
  const route = /\$AG(\/[\w/-]*)/.exec(command)?.[1] ?? '';
  const found: Record<string, string> = {};
  if (typeof answer.csrfToken === 'string') found.CSRF = answer.csrfToken;
  if (method !== 'POST') return found;
  if (route === '/v1/approvals' && answer.id) found.ID = answer.id;
  if (route === '/v1/webhooks' && answer.id) found.ENDPOINT_ID = answer.id;
  if (route === '/v1/audit/exports' && answer.id) found.EXPORT_ID = answer.id;
  if (route === '/v1/keys' && answer.key?.id) found.KEY_ID = answer.key.id;
  if (route === '/v1/members' && answer.member?.id) {
    found.MEMBER_ID = answer.member.id;
    found.INVITE_TOKEN = String(answer.inviteUrl).split('/').pop()!;
  }
  return found;
}

interface Outcome {
  statuses: number[];
  stdout: string;
  variables: Record<string, string>;
}

/** The shell's own variables, not the guide's. */
const SHELL_VARIABLES = new Set(['PATH', 'HOME', 'PWD', 'OLDPWD', 'SHLVL', '_']);

let runs = 0;

/** Runs one command with bash in `cwd` (where its cookie jar lives); answers the statuses of its curl calls, its output, and the variables it left. */
function runCommand(command: DocCommand, variables: Record<string, string>, cwd: string): Promise<Outcome> {
  const stateFile = path.join(cwd, `.state-${++runs}`);
  const script = `exec 3>"${stateFile}"\n${CURL}\nset -a\n${command.text}\nset +a\nenv -0 >&3`;
  return new Promise((resolve) => {
    const child = execFile(
      'bash',
      ['-c', script],
      { cwd, env: { PATH: process.env.PATH, HOME: cwd, ...variables }, timeout: 45_000 },
      async (_error, stdout, stderr) => {
        const statuses = [...stderr.matchAll(/@@status (\d{3})/g)].map((match) => Number(match[1]));
        const state = await readFile(stateFile, 'utf8').catch(() => '');
        const after = Object.fromEntries(
          state
            .split('\0')
            .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] as const)
            .filter(([name]) => /^[A-Z][A-Z0-9_]*$/.test(name) && !SHELL_VARIABLES.has(name)),
        );
        resolve({ statuses, stdout, variables: after });
      },
    );
    child.stdin?.end();
  });
}

const isCurl = (command: DocCommand) => /\bcurl\b/.test(command.text);
/** Assignments of what the reader fills in (`export KEY=agk_…`) are the variables the test sets itself. */
const isAssignment = (command: DocCommand) => /^(export\s+)?[A-Z_]+=/.test(command.text) && !command.text.includes('…');

describe('the guide’s curl examples, run as written', () => {
  it.each(GUIDES)(
    '%s answers what it shows',
    async (guide) => {
      const commands = docCommands(guide);
      const unmarked = commands.filter((command) => isCurl(command) && command.status === null);
      expect(
        unmarked.map((command) => `${command.file}:${command.line}`),
        'curl examples that show no status',
      ).toEqual([]);

      const cwd = await mkdtemp(path.join(scratch, 'run-'));
      let variables = printedVariables();
      const results: { where: string; shown: number | null; answered: number[]; output: string }[] = [];
      const inFlight: Promise<void>[] = [];
      for (const command of commands.filter((command) => isCurl(command) || isAssignment(command))) {
        const where = `${command.file}:${command.line}`;
        const run = runCommand(command, variables, cwd);
        // A long-poll runs beside the examples after it, as in a second terminal, until they decide it.
        if (/[?&]wait=/.test(command.text)) {
          inFlight.push(
            run.then((outcome) => void results.push({ where, shown: command.status, answered: outcome.statuses, output: outcome.stdout })),
          );
          continue;
        }
        let outcome = await run;
        // `# 200 …, 409 until …` shows an answer that comes once work in the background is done: asked again until then.
        const until = /\b([1-5]\d\d) until\b/.exec(command.text)?.[1];
        for (let tries = 0; until && outcome.statuses[0] === Number(until) && tries < 50; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          outcome = await runCommand(command, variables, cwd);
        }
        let body: unknown = null;
        try {
          body = JSON.parse(outcome.stdout);
        } catch {
          // Not JSON (headers shown, CSV, an event stream): nothing to take from it.
        }
        variables = { ...variables, ...outcome.variables, ...captures(command.text, body) };
        if (isCurl(command))
          results.push({ where, shown: command.status, answered: outcome.statuses, output: outcome.stdout.slice(0, 300) });
      }
      await Promise.all(inFlight);
      const wrong = results.filter((result) => result.answered.length !== 1 || result.answered[0] !== result.shown);
      expect(wrong).toEqual([]);
    },
    120_000,
  );
});
