// What a newcomer waits for: a CLI call, and a restart of `npm run dev` with nothing changed.
//
//   npm run bench:first-hour                  5 runs of each
//   BENCH_RUNS=10 npm run bench:first-hour
//
// Each figure is the wall time of whole processes, taken in turns with its ceiling so that the
// machine's drift moves both: a CLI call (`npm run cli -- org:plan`, which checks that dist/ is
// current, then runs it) against a bare Node process that asks PostgreSQL `SELECT 1` (the least a
// command touching the database can cost); a restart of `npm run dev` until its banner against
// `node dist/src/dev.js` started directly (the same start, without the check that skips the
// builds). The last line of stdout is the figures as JSON.
import { spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatTable, median, round } from './lib/figures.js';
import { deleteRedisKeys, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const RUNS = envInt('BENCH_RUNS', 5);
const DATABASE = 'approval_gate_bench_first_hour';
const REDIS_PREFIX = 'agbenchfirsthour';
const PORT = 3912;
const ROOT = path.resolve(import.meta.dirname, '..');
const DEMO_FILE = '.approval-gate-dev.json';

/** Runs a command to its end (or until `ready` sees its output, then stops it); answers its wall time in ms. */
function timed(command: string, args: string[], env: Record<string, string>, ready?: (output: string) => boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let done = false;
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready && !done && ready(output)) {
        done = true;
        const elapsed = performance.now() - started;
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
  console.log(JSON.stringify(figures));
});
