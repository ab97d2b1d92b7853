// What a newcomer waits for: a CLI call, and a restart of `npm run dev` with nothing changed.
//
//   npm run bench:first-hour                  5 runs of each
//   BENCH_RUNS=10 npm run bench:first-hour
//   BENCH_CLONE=1 npm run bench:first-hour    first, once: clone to the first working request
//
// Each figure is the wall time of whole processes, taken in turns with its ceiling so that the
// machine's drift moves both: a CLI call (`npm run cli -- org:plan`, which checks that dist/ is
// current, then runs it) against a bare Node process that asks PostgreSQL `SELECT 1` (the least a
// command touching the database can cost); a restart of `npm run dev` until its banner against
// `node dist/src/dev.js` started directly (the same start, without the check that skips the
// builds). With BENCH_CLONE=1, first, once: what the README's first steps take from a clone of
// this repository's HEAD (git clone, npm ci from npm's cache, npm run dev to its banner, then the
// README's first request), each step timed; the clone's database is dropped afterwards. The last
// line of stdout is the figures as JSON.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { formatTable, median, round } from './lib/figures.js';
import { deleteRedisKeys, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import { envFlag, envInt, log, runBenchmark } from './lib/run.js';

const RUNS = envInt('BENCH_RUNS', 5);
const DATABASE = 'approval_gate_bench_first_hour';
const REDIS_PREFIX = 'agbenchfirsthour';
const PORT = 3912;
const ROOT = path.resolve(import.meta.dirname, '..');
const DEMO_FILE = '.approval-gate-dev.json';

/**
 * Runs a command to its end (or until `ready` sees its output, then stops it, or with `keep` leaves
 * it running: `stop` ends it); answers its wall time in ms.
 */
function timed(
  command: string,
  args: string[],
  env: Record<string, string>,
  ready?: (output: string) => boolean,
  { cwd = ROOT, keep = false }: { cwd?: string; keep?: boolean } = {},
): Promise<number> & { output?: () => string; stop?: () => void } {
  let output = '';
  let stop = () => {};
  const result = new Promise<number>((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    stop = () => {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
    };
    let done = false;
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready && !done && ready(output)) {
        done = true;
        const elapsed = performance.now() - started;
        if (keep) return resolve(elapsed);
        process.kill(-child.pid!, 'SIGTERM');
        child.once('exit', () => resolve(elapsed));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      if (done) return;
      if (ready || code !== 0) reject(new Error(`${command} ${args.join(' ')} ended with ${code}:\n${output}`));
      else resolve(performance.now() - started);
    });
  });
  return Object.assign(result, { output: () => output, stop: () => stop() });
}

/**
 * The README's first steps from a clone of HEAD, once, each timed: clone, install (npm ci from
 * npm's cache: what a second project on the same machine would wait for, not the network), `npm
 * run dev` to its banner (the first build, the migrations, the demo), then the README's first
 * request with the key the banner printed.
 */
interface CloneSteps {
  cloneMs: number;
  installMs: number;
  devMs: number;
  firstRequestMs: number;
  totalMs: number;
}

async function cloneToFirstRequest(env: Record<string, string>): Promise<CloneSteps> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ag-first-hour-'));
  try {
    const clone = path.join(dir, 'approval-gate');
    const steps: CloneSteps = { cloneMs: 0, installMs: 0, devMs: 0, firstRequestMs: 0, totalMs: 0 };
    steps.cloneMs = await timed('git', ['clone', '--quiet', ROOT, clone], env);
    log(`cloned in ${round(steps.cloneMs / 1000)} s; npm ci`);
    steps.installMs = await timed('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], env, undefined, { cwd: clone });
    log(`installed in ${round(steps.installMs / 1000)} s; npm run dev`);
    const dev = timed('npm', ['run', 'dev'], env, (output) => output.includes('export AG='), { cwd: clone, keep: true });
    try {
      const started = performance.now();
      log(`npm run dev printed its banner in ${round((await dev) / 1000)} s; waiting for its web process`);
      // The banner comes before the web process listens: the step ends when it answers.
      while ((await fetch(`http://127.0.0.1:${env.PORT}/readyz`).catch(() => null))?.status !== 200) {
        if (performance.now() - started > 120_000) throw new Error('the web process of npm run dev did not answer within 120 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      steps.devMs = (await dev) + (performance.now() - started);
      const agentKey = /AGENT_KEY=(\S+)/.exec(dev.output!())![1]!;
      const sent = performance.now();
      const response = await fetch(`http://127.0.0.1:${env.PORT}/v1/approvals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ action: 'refund', payload: { amount: 40 }, policyKey: 'refunds', agent: 'support-bot' }),
      });
      steps.firstRequestMs = performance.now() - sent;
      if (response.status !== 200) throw new Error(`the first request answered ${response.status}: ${await response.text()}`);
    } finally {
      dev.stop!();
      await dev.catch(() => undefined);
    }
    steps.totalMs = steps.cloneMs + steps.installMs + steps.devMs + steps.firstRequestMs;
    return steps;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

runBenchmark('bench:first-hour', 30 * 60_000, async (cleanup) => {
  const databaseUrl = await recreateDatabase(DATABASE);
  cleanup(() => dropDatabase(DATABASE));
  cleanup(() => deleteRedisKeys(REDIS_PREFIX));
  const env = { DATABASE_URL: databaseUrl, REDIS_PREFIX, PORT: String(PORT), LOG_LEVEL: 'warn' };
  const banner = (output: string) => output.includes('export AG=');

  // npm run dev keeps its demo in the working directory: a developer's own is put back afterwards.
  const demoFile = path.join(ROOT, DEMO_FILE);
  const own = await readFile(demoFile, 'utf8').catch(() => null);
  await rm(demoFile, { force: true });
  cleanup(() => (own === null ? rm(demoFile, { force: true }) : writeFile(demoFile, own, { mode: 0o600 })));

  const cloned = envFlag('BENCH_CLONE', false) ? await cloneToFirstRequest(env) : null;
  if (cloned) {
    // The clone seeded the demo into the same database: this tree's first start makes its own.
    await recreateDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
  }

  log('first npm run dev: builds what changed, seeds the demo');
  await timed('npm', ['run', 'dev'], env, banner);
  const { orgId } = JSON.parse(await readFile(demoFile, 'utf8')) as { orgId: string };

  const cli: number[] = [];
  const bare: number[] = [];
  const restart: number[] = [];
  const direct: number[] = [];
  const selectOne = `const pg = require('pg'); const c = new pg.Client(process.env.DATABASE_URL); c.connect().then(() => c.query('SELECT 1')).then(() => c.end());`;
  for (let run = 1; run <= RUNS; run++) {
    log(`round ${run} of ${RUNS}`);
    cli.push(await timed('npm', ['run', 'cli', '--', 'org:plan', '--org', orgId, '--plan', 'pro'], env));
    bare.push(await timed(process.execPath, ['-e', selectOne], env));
    restart.push(await timed('npm', ['run', 'dev'], env, banner));
    direct.push(await timed(process.execPath, ['dist/src/dev.js'], env, banner));
  }

  const figures = {
    ...(cloned ? { cloneToFirstRequest: Object.fromEntries(Object.entries(cloned).map(([step, ms]) => [step, round(ms)])) } : {}),
    cliMs: round(median(cli)),
    cliCeilingMs: round(median(bare)),
    cliRatio: round(median(cli) / median(bare), 2),
    devRestartMs: round(median(restart)),
    devRestartCeilingMs: round(median(direct)),
    devRestartRatio: round(median(restart) / median(direct), 2),
  };
  console.log(
    formatTable(
      ['', 'median ms', 'ceiling ms', 'ratio'],
      [
        ['npm run cli -- org:plan', figures.cliMs, figures.cliCeilingMs, figures.cliRatio],
        ['npm run dev, nothing changed, to its banner', figures.devRestartMs, figures.devRestartCeilingMs, figures.devRestartRatio],
      ],
    ),
  );
  if (cloned) {
    console.log(
      `\nClone to the first working request: ${round(cloned.totalMs / 1000)} s (git clone ${round(cloned.cloneMs / 1000)} s, ` +
        `npm ci ${round(cloned.installMs / 1000)} s, npm run dev to its banner ${round(cloned.devMs / 1000)} s, ` +
        `the first request ${round(cloned.firstRequestMs)} ms)`,
    );
  }
  console.log(JSON.stringify(figures));
});
