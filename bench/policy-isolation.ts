// One organization sends the most expensive policy input we could construct, while another sends
// ordinary creations at a steady rate. Prints the web process's event-loop delay
// (monitorEventLoopDelay p99 and max) and the other organization's latency, without and with each
// attack. The web process runs compiled, as the Procfile does; the attacker is a child process.
//
//   npm run bench:policy-isolation                        15 s per phase
//   BENCH_DURATION=5 npm run bench:policy-isolation
//
// BENCH_RATE (default 100) is the other organization's creations per second, BENCH_ATTACKERS
// (default 4) the attacker's connections, each sending its next request when the last is answered. The last line of stdout is the figures as JSON.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { ruleCost } from '../src/modules/policies/policy-cost.js';
import { DEFAULT_EVALUATION_LIMITS } from '../src/modules/policies/policy-rules.js';
import { createOrgs, deleteRedisKeys, dropDatabase, HOST, recreateDatabase, REDIS_URL } from './lib/fixtures.js';
import { formatTable, percentile, round } from './lib/figures.js';
import { putPolicy } from './lib/http.js';
import { steadyCreations } from './lib/steady-creations.js';
import { answers200, buildOnce, PROJECT_ROOT, startNodeProcess, type NodeProcess } from './lib/processes.js';
import { envNumber, log, runBenchmark } from './lib/run.js';

const DURATION_S = envNumber('BENCH_DURATION', 15);
const RATE = envNumber('BENCH_RATE', 100);
const ATTACKERS = Math.round(envNumber('BENCH_ATTACKERS', 4));
const DATABASE = 'approval_gate_bench_isolation';
const REDIS_PREFIX = 'agbenchiso';
const API_PORT = 3911;

interface Attack {
  name: string;
  when: string;
  body: { action: string; payload: Record<string, unknown> };
}

const ints = (count: number) => Array.from({ length: count }, (_, index) => index);

/** The largest n for which the rule's cost bound on input(n) stays within the budget: the costliest input still run. */
function largestWithinBudget(when: string, input: (n: number) => Attack['body']): number {
  let low = 1;
  let high = 1_000_000;
  const cost = (n: number) => ruleCost(when, { ...input(n), agent: null, context: null });
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (cost(middle) <= DEFAULT_EVALUATION_LIMITS.costBudgetSteps) low = middle;
    else high = middle - 1;
  }
  return low;
}

function attacks(): Attack[] {
  const quadratic = 'payload.l.all(x, payload.l.all(y, y != x))';
  const quadraticInput = (n: number) => ({ action: 'attack', payload: { l: ints(n) } });
  const absorbing = 'payload.l.all(x, payload.l.exists(y, y == x + 1))';
  const regex = 'payload.s.matches("(x+x+)+y")';
  const regexInput = (n: number) => ({ action: 'attack', payload: { s: 'x'.repeat(n) } });
  const pick = (name: string, when: string, input: (n: number) => Attack['body']): Attack => {
    const n = largestWithinBudget(when, input);
    return { name: `${name} (n=${n})`, when, body: input(n) };
  };
  return [
    {
      name: 'control: the same flood under an ordinary rule',
      when: 'payload.amount <= 100.0',
      body: { action: 'refund', payload: { amount: 5 } },
    },
    {
      name: 'catastrophic regex, 200-char action',
      when: 'action.matches("^(a+)+$")',
      body: { action: `${'a'.repeat(199)}!`, payload: {} },
    },
    ...((longest) => [
      longest,
      { name: 'control: the same payload under an ordinary rule', when: 'payload.amount <= 100.0', body: longest.body },
    ])(pick('regex on the longest string within budget', regex, regexInput)),
    pick('nested comprehension within budget', quadratic, quadraticInput),
    pick('nested comprehension raising errors, within budget', absorbing, quadraticInput),
    { name: 'nested comprehension over budget (fails closed)', when: quadratic, body: quadraticInput(20_000) },
  ];
}

/** The attacker, in its own process so that its load does not slow the measuring one. */
async function attack(key: string, target: Attack, durationS: number): Promise<{ rps: number; statusCodes: Record<string, number> }> {
  const spec = path.join(tmpdir(), `approval-gate-attack-${process.pid}.json`);
  writeFileSync(spec, JSON.stringify({ key, body: { ...target.body, policyKey: 'worst' }, durationS }));
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/policy-isolation.ts', 'attacker', spec], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await once(child, 'exit');
  return JSON.parse(output) as { rps: number; statusCodes: Record<string, number> };
}

async function runAttacker(): Promise<void> {
  const spec = process.argv[3]!;
  const { key, body, durationS } = JSON.parse(readFileSync(spec, 'utf8')) as { key: string; body: object; durationS: number };
  rmSync(spec);
  const result = await autocannon({
    url: `http://${HOST}:${API_PORT}/v1/approvals`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
    connections: ATTACKERS,
    duration: durationS,
  });
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, Number(stats.count ?? 0)]),
  );
  process.stdout.write(JSON.stringify({ rps: result.requests.average, statusCodes }));
}

function loopDelay(api: NodeProcess, file: string): { p50Ms: number; p99Ms: number; maxMs: number } {
  process.kill(api.pid, 'SIGUSR2');
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    try {
      const report = JSON.parse(readFileSync(file, 'utf8')) as { p50Ms: number; p99Ms: number; maxMs: number };
      rmSync(file);
      return report;
    } catch {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  throw new Error('the web process wrote no event-loop report');
}

/** The web process, compiled as the Procfile runs it, inside bench/loop-delay-web.ts, which records its event-loop delay. */
async function startMonitoredWebServer(databaseUrl: string, loopDelayFile: string): Promise<NodeProcess> {
  const build = await buildOnce();
  if (build.code !== 0) throw new Error(`npm run build failed:\n${build.output}`);
  return startNodeProcess({
    label: 'web',
    args: ['--import', 'tsx', 'bench/loop-delay-web.ts'],
    env: {
      NODE_ENV: 'production',
      PORT: String(API_PORT),
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      REDIS_PREFIX,
      LOG_LEVEL: 'info',
      LOOP_DELAY_FILE: loopDelayFile,
    },
    port: API_PORT,
    isReady: () => answers200(API_PORT, '/readyz'),
  });
}

if (process.argv[2] === 'attacker') {
  await runAttacker();
} else {
  runBenchmark('bench:policy-isolation', (attacks().length + 2) * (DURATION_S + 30) * 1000 + 300_000, async (cleanup) => {
    cleanup(async () => {
      await dropDatabase(DATABASE);
      await deleteRedisKeys(REDIS_PREFIX);
    });
    const dbUrl = await recreateDatabase(DATABASE);
    const [attacker, other] = await createOrgs(dbUrl, 2);
    const loopFile = path.join(tmpdir(), `approval-gate-loop-delay-${process.pid}.json`);
    const api = await startMonitoredWebServer(dbUrl, loopFile);
    cleanup(() => api.stop());
    await putPolicy(API_PORT, other!.key, 'ordinary', { rules: [{ when: 'payload.amount <= 100.0', outcome: 'allow' }] });
    log(`web pid ${api.pid}; the other organization sends ${RATE} creations/s; the attacker uses ${ATTACKERS} connections`);

    await steadyCreations({ port: API_PORT, key: other!.key, policyKey: 'ordinary', rate: RATE }, 3); // warm-up
    loopDelay(api, loopFile);

    const rows: (string | number)[][] = [];
    const figures: Record<string, unknown>[] = [];
    const phase = async (name: string, target: Attack | null) => {
      if (target) await putPolicy(API_PORT, attacker!.key, 'worst', { rules: [{ when: target.when, outcome: 'allow' }] });
      loopDelay(api, loopFile);
      const [steady, attackResult] = await Promise.all([
        steadyCreations({ port: API_PORT, key: other!.key, policyKey: 'ordinary', rate: RATE }, DURATION_S),
        target ? attack(attacker!.key, target, DURATION_S) : Promise.resolve(null),
      ]);
      const delay = loopDelay(api, loopFile);
      const latency = {
        p50Ms: round(percentile(steady.latencies, 50)),
        p99Ms: round(percentile(steady.latencies, 99)),
        maxMs: round(Math.max(...steady.latencies)),
      };
      const attackerFigures = attackResult ? `${round(attackResult.rps, 0)} req/s ${JSON.stringify(attackResult.statusCodes)}` : '-';
      log(`${name}: other p99 ${latency.p99Ms} ms; loop p99 ${delay.p99Ms} ms, max ${delay.maxMs} ms; attacker ${attackerFigures}`);
      rows.push([name, latency.p50Ms, latency.p99Ms, latency.maxMs, steady.failures, delay.p99Ms, delay.maxMs, attackerFigures]);
      figures.push({ phase: name, other: { ...latency, failures: steady.failures }, eventLoop: delay, attacker: attackResult });
    };

    await phase('no attack', null);
    for (const target of attacks()) await phase(target.name, target);

    console.log(
      formatTable(
        ['phase', 'other p50 ms', 'other p99 ms', 'other max ms', 'other failed', 'loop p99 ms', 'loop max ms', 'attacker'],
        rows,
      ),
    );
    console.log(
      JSON.stringify({ benchmark: 'policy-isolation', settings: { durationS: DURATION_S, rate: RATE, attackers: ATTACKERS }, figures }),
    );
  });
}
