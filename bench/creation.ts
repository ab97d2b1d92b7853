// Approval creation throughput (POST /v1/approvals) against the real API in a child process,
// compared with a bare Express 5 "hello JSON" ceiling measured on the same machine just before and
// just after each scenario; then decisions: every approval the pending scenarios left is approved
// once (POST /v1/approvals/:id/decision with the reviewer's key), those of the first org, then the
// others'.
//
//   npm run bench:creation                          20 s measured per scenario, 3 runs
//   BENCH_DURATION=5 BENCH_RUNS=1 npm run bench:creation
//   BENCH_SCENARIOS='1 org' npm run bench:creation    only the scenarios whose names contain one of these (comma-separated)
//
// BENCH_WARMUP (default 5 s) runs before every measurement and is not counted. The last line of
// stdout is the figures as JSON.
import { measureBracketed } from './lib/bracketing.js';
import { mapConcurrent } from './lib/concurrency.js';
import { formatTable, median, round } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, HOST, recreateDatabase, type BenchOrg } from './lib/fixtures.js';
import { putPolicy } from './lib/http.js';
import pg from 'pg';
import { measure, measureEach, type CpuWatch, type Measurement, type Target } from './lib/load.js';
import { startHelloServer, startWebServer } from './lib/processes.js';
import { envInt, envNumber, log, runBenchmark } from './lib/run.js';

const DURATION_S = envNumber('BENCH_DURATION', 20);
const WARMUP_S = envNumber('BENCH_WARMUP', 5);
const RUNS = envInt('BENCH_RUNS', 3);
const SCENARIO_FILTER = (process.env.BENCH_SCENARIOS ?? '')
  .split(',')
  .map((part) => part.trim())
  .filter(Boolean);
const CONNECTIONS = 50;
const ORG_COUNT = 100;
const DATABASE = 'approval_gate_bench';
const REDIS_PREFIX = 'agbench';
const API_PORT = 3901;
const LOAD = { connections: CONNECTIONS, warmupS: WARMUP_S, durationS: DURATION_S };
const HELLO_PORT = 3902;

const POLICIES = {
  'bench-review': { defaultOutcome: 'review' },
  'bench-allow': { rules: [{ when: 'true', outcome: 'allow' }], defaultOutcome: 'review' },
} as const;

function creationTarget(name: string, policyKey: keyof typeof POLICIES, orgs: BenchOrg[]): Target {
  return {
    name,
    port: API_PORT,
    method: 'POST',
    path: '/v1/approvals',
    body: JSON.stringify({ action: 'refund', payload: { amount: 5000, currency: 'EUR' }, policyKey, agent: 'bench-agent' }),
    keys: orgs.map((org) => org.key),
    expectedStatus: policyKey === 'bench-allow' ? 200 : 201,
  };
}

/** What a scenario measures, and which group commit (creations or votes) its batches show. */
interface Scenario {
  name: string;
  operation: 'create' | 'vote';
  measure(): Promise<Measurement>;
}

/** Medians over the runs for the figures, totals for the problems; the ceiling is its own ratio, 1. */
function summarize(runs: Measurement[], ratios: number[] = runs.map(() => 1)) {
  const total = (pick: (m: Measurement) => number) => runs.reduce((sum, m) => sum + pick(m), 0);
  return {
    rps: round(median(runs.map((m) => m.rps)), 0),
    rpsMin: round(Math.min(...runs.map((m) => m.rps)), 0),
    rpsMax: round(Math.max(...runs.map((m) => m.rps)), 0),
    p50Ms: median(runs.map((m) => m.p50Ms)),
    p99Ms: median(runs.map((m) => m.p99Ms)),
    ratioToCeiling: round(median(ratios), 3),
    cpuMsPerRequest: medianCpu(runs),
    non2xx: total((m) => m.non2xx),
    errors: total((m) => m.errors),
    timeouts: total((m) => m.timeouts),
    unexpected2xx: total((m) => m.unexpected2xx),
    runs,
  };
}

/** Per process, the median over the runs of its CPU ms per request. */
function medianCpu(runs: Measurement[]): Record<string, number> {
  const labels = Object.keys(runs[0]?.cpuMsPerRequest ?? {});
  return Object.fromEntries(labels.map((label) => [label, median(runs.map((m) => m.cpuMsPerRequest?.[label] ?? NaN))]));
}

/** Decisions of every approval still pending in these orgs, in random order (so that consecutive ones are of different orgs). */
async function decisionTarget(name: string, dbUrl: string, orgs: BenchOrg[]): Promise<Target> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string; org_id: string }>(
      "SELECT id, org_id FROM approvals WHERE status = 'pending' AND org_id = ANY ($1::uuid[]) ORDER BY random()",
      [orgs.map((org) => org.orgId)],
    );
    const reviewerKeys = new Map(orgs.map((org) => [org.orgId, org.reviewerKey]));
    return {
      name,
      port: API_PORT,
      method: 'POST',
      path: '/v1/approvals',
      body: JSON.stringify({ verdict: 'approved' }),
      rotation: rows.map((row) => ({ path: `/v1/approvals/${row.id}/decision`, key: reviewerKeys.get(row.org_id)! })),
      expectedStatus: 200,
    };
  } finally {
    await client.end();
  }
}

const METRICS_TOKEN = 'bench-metrics-token-0123456789';

/**
 * The web process's cumulative group-commit figures for creations or votes: batches per `le`
 * bucket of their size, and the seconds its statements have been in flight.
 */
async function groupCommitTotals(operation: 'create' | 'vote'): Promise<{ buckets: Map<string, number>; inFlightSeconds: number }> {
  const response = await fetch(`http://${HOST}:${API_PORT}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const buckets = new Map<string, number>();
  let inFlightSeconds = 0;
  for (const line of (await response.text()).split('\n')) {
    if (!line.includes(`operation="${operation}"`)) continue;
    const bucket = /^approval_gate_write_batch_size_bucket\{[^}]*le="([^"]+)"[^}]*\} (\d+)/.exec(line);
    if (bucket) buckets.set(bucket[1]!, Number(bucket[2]));
    const seconds = /^approval_gate_write_batch_seconds_sum\{[^}]*\} ([\d.e+-]+)/.exec(line);
    if (seconds) inFlightSeconds = Number(seconds[1]);
  }
  return { buckets, inFlightSeconds };
}

/** Batches by size range, and the share of requests that shared their commit, from cumulative bucket counts. */
function describeBatches(cumulative: Map<string, number>): string {
  const bounds = [...cumulative.keys()].filter((le) => le !== '+Inf').sort((a, b) => Number(a) - Number(b));
  let previous = 0;
  let lower = 1;
  const parts: string[] = [];
  for (const le of [...bounds, '+Inf']) {
    const count = (cumulative.get(le) ?? 0) - previous;
    previous = cumulative.get(le) ?? 0;
    if (count > 0) parts.push(`${le === '+Inf' ? `>${lower - 1}` : lower === Number(le) ? le : `${lower}-${le}`}: ${count}`);
    lower = Number(le) + 1;
  }
  return parts.length > 0 ? `${previous} batches; by size ${parts.join(', ')}` : 'no batches';
}

/** Per run: the six scenarios, and the ceiling before the first and after each of them. */
const MEASUREMENTS_PER_RUN = 13;

runBenchmark('bench:creation', (RUNS * MEASUREMENTS_PER_RUN * (WARMUP_S + DURATION_S + 20) + 300) * 1000, async (cleanup) => {
  log(`${RUNS} run(s); per scenario ${WARMUP_S} s warm-up + ${DURATION_S} s measured, ${CONNECTIONS} connections`);
  cleanup(async () => {
    await dropDatabase(DATABASE);
    const deleted = await deleteRedisKeys(REDIS_PREFIX);
    log(`cleaned up: dropped ${DATABASE}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:*`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  log(`migrated ${DATABASE}; creating ${ORG_COUNT} organizations`);
  const orgs = await createOrgs(dbUrl, ORG_COUNT);

  const hello = await startHelloServer(HELLO_PORT);
  cleanup(() => hello.stop());
  const api = await startWebServer({ port: API_PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX, env: { METRICS_TOKEN } });
  cleanup(() => api.stop());
  log(`servers up (api pid ${api.pid}, hello pid ${hello.pid}); putting policies`);
  await mapConcurrent(orgs, 10, (org) =>
    Promise.all(Object.entries(POLICIES).map(([policyKey, document]) => putPolicy(API_PORT, org.key, policyKey, document))),
  );

  const ceilingTarget: Target = { name: 'express hello (ceiling)', port: HELLO_PORT, method: 'GET', path: '/', expectedStatus: 200 };
  const ceilingWatch: CpuWatch = { pids: { hello: hello.pid }, postgresDatabase: DATABASE };
  const apiWatch: CpuWatch = { pids: { web: api.pid }, postgresDatabase: DATABASE };
  const creation = (target: Target): Scenario => ({
    name: target.name,
    operation: 'create',
    measure: () => measure(target, LOAD, apiWatch),
  });
  const decision = (name: string, decidedOrgs: BenchOrg[]): Scenario => ({
    name,
    operation: 'vote',
    measure: async () => {
      const target = await decisionTarget(name, dbUrl, decidedOrgs);
      if (!target.rotation!.length) throw new Error(`${name}: no pending approvals to decide (the pending scenarios leave them)`);
      return measureEach(target, CONNECTIONS, apiWatch);
    },
  });
  const scenarios = [
    creation(creationTarget('pending, 1 org', 'bench-review', orgs.slice(0, 1))),
    creation(creationTarget(`pending, ${ORG_COUNT} orgs`, 'bench-review', orgs)),
    creation(creationTarget('auto-approve, 1 org', 'bench-allow', orgs.slice(0, 1))),
    creation(creationTarget(`auto-approve, ${ORG_COUNT} orgs`, 'bench-allow', orgs)),
    decision('decide, 1 org', orgs.slice(0, 1)),
    decision(`decide, ${ORG_COUNT - 1} orgs`, orgs.slice(1)),
  ].filter((scenario) => SCENARIO_FILTER.length === 0 || SCENARIO_FILTER.some((part) => scenario.name.includes(part)));

  const ceilingRuns: Measurement[] = [];
  const scenarioRuns = scenarios.map(() => ({
    runs: [] as Measurement[],
    ratios: [] as number[],
    batches: new Map<string, number>(),
    inFlightSeconds: 0,
    wallSeconds: 0,
  }));
  const measureScenario = async (scenario: Scenario, i: number) => {
    const before = await groupCommitTotals(scenario.operation);
    const started = performance.now();
    const measured = await scenario.measure();
    const wallSeconds = (performance.now() - started) / 1000;
    const after = await groupCommitTotals(scenario.operation);
    const totals = scenarioRuns[i]!;
    for (const [bucket, count] of after.buckets) {
      totals.batches.set(bucket, (totals.batches.get(bucket) ?? 0) + count - (before.buckets.get(bucket) ?? 0));
    }
    totals.inFlightSeconds += after.inFlightSeconds - before.inFlightSeconds;
    totals.wallSeconds += wallSeconds;
    return measured;
  };
  for (let run = 1; run <= RUNS; run++) {
    log(`--- run ${run}/${RUNS}`);
    const bracketed = await measureBracketed(scenarios, () => measure(ceilingTarget, LOAD, ceilingWatch), measureScenario);
    ceilingRuns.push(...bracketed.ceilings);
    for (const [i, { measured, ratio }] of bracketed.scenarios.entries()) {
      scenarioRuns[i]!.runs.push(measured);
      scenarioRuns[i]!.ratios.push(ratio);
    }
  }

  const ceiling = summarize(ceilingRuns);
  const results = scenarios.map((scenario, i) => ({
    scenario: scenario.name,
    ...summarize(scenarioRuns[i]!.runs, scenarioRuns[i]!.ratios),
    writeBatches: Object.fromEntries(scenarioRuns[i]!.batches),
    writeInFlightShare: round(scenarioRuns[i]!.inFlightSeconds / scenarioRuns[i]!.wallSeconds, 3),
  }));
  const rows = [{ scenario: ceilingTarget.name, ...ceiling }, ...results];

  console.log(
    `\nApproval creation, ${CONNECTIONS} connections, ${DURATION_S} s measured after ${WARMUP_S} s warm-up; decisions, each pending approval once; median of ${RUNS} run(s)`,
  );
  console.log(
    `(non-2xx, errors: totals over all runs; "vs ceiling": req/s / the mean of the hello req/s measured just before and just after)\n`,
  );
  console.log(
    formatTable(
      ['scenario', 'req/s', 'req/s range', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'vs ceiling'],
      rows.map((r) => [
        r.scenario,
        r.rps,
        `${r.rpsMin}-${r.rpsMax}`,
        r.p50Ms,
        r.p99Ms,
        r.non2xx,
        r.errors + r.timeouts,
        `${round(r.ratioToCeiling * 100, 1)}%`,
      ]),
    ),
  );
  const troubled = rows.filter((r) => r.non2xx + r.errors + r.timeouts + r.unexpected2xx > 0);
  for (const r of troubled) {
    const codes = r.runs.map((m) => JSON.stringify(m.statusCodes)).join(' ');
    console.log(
      `\n!!! ${r.scenario}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts, ${r.unexpected2xx} unexpected 2xx; status codes per run: ${codes}`,
    );
  }
  if (troubled.length === 0) console.log('\nNo non-2xx responses, errors or unexpected statuses.');
  console.log('\nCPU ms per request by process (median over the runs):');
  for (const r of rows) {
    const perProcess = Object.entries(r.cpuMsPerRequest).map(([label, ms]) => `${label} ${ms}`);
    console.log(`  ${r.scenario}: ${perProcess.join(', ')}`);
  }
  console.log('\nCreations or votes written per commit (group commit), over all runs:');
  for (const r of results) {
    const inFlight = `its statement in flight ${round(r.writeInFlightShare * 100, 1)}% of the time`;
    console.log(`  ${r.scenario}: ${describeBatches(new Map(Object.entries(r.writeBatches)))}; ${inFlight}`);
  }

  console.log(
    JSON.stringify({
      benchmark: 'creation',
      at: new Date().toISOString(),
      settings: { durationS: DURATION_S, warmupS: WARMUP_S, runs: RUNS, connections: CONNECTIONS, orgs: ORG_COUNT },
      ceiling,
      scenarios: results,
    }),
  );
});
