// Creation throughput under a policy with a shadow against the same policy without one, in one
// run: rounds alternate between the two (the order swapped each round) so that a machine whose
// load drifts weighs on both alike. Auto-approved creations, one organization each, the web
// process compiled as the Procfile runs it.
//
//   npm run bench:shadow-creation                       3 rounds of 10 s per side
//   BENCH_ROUNDS=2 BENCH_DURATION=5 BENCH_BUILD=0 npm run bench:shadow-creation
//
// The last line of stdout is the figures as JSON.
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import { formatTable, median, round } from './lib/figures.js';
import { putPolicy } from './lib/http.js';
import { measure, type Measurement } from './lib/load.js';
import { startWebServer } from './lib/processes.js';
import { envNumber, log, runBenchmark } from './lib/run.js';

const ROUNDS = Math.round(envNumber('BENCH_ROUNDS', 3));
const DURATION_S = envNumber('BENCH_DURATION', 10);
const CONNECTIONS = Math.round(envNumber('BENCH_CONNECTIONS', 32));
const DATABASE = 'approval_gate_bench_shadow';
const REDIS_PREFIX = 'agbenchshadow';
const API_PORT = 3914;

const LIVE = { rules: [{ when: "action == 'refund' && payload.amount <= 100.0", outcome: 'allow' }] };
const SHADOW = { rules: [{ when: "action == 'refund' && payload.amount <= 50.0", outcome: 'allow' }] };

runBenchmark('bench:shadow-creation', ROUNDS * 2 * (DURATION_S + 10) * 1000 + 900_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [plain, shadowed] = await createOrgs(dbUrl, 2);
  const api = await startWebServer({ port: API_PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX });
  cleanup(() => api.stop());
  await putPolicy(API_PORT, plain!.key, 'refunds', LIVE);
  await putPolicy(API_PORT, shadowed!.key, 'refunds', { ...LIVE, shadow: SHADOW });

  const body = JSON.stringify({ action: 'refund', payload: { amount: 75, currency: 'EUR' }, policyKey: 'refunds' });
  const run = (name: string, key: string) =>
    measure(
      { name, port: API_PORT, method: 'POST', path: '/v1/approvals', body, keys: [key], expectedStatus: 200 },
      { connections: CONNECTIONS, warmupS: 2, durationS: DURATION_S },
    );
  const without: Measurement[] = [];
  const withShadow: Measurement[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sides = [
      async () => without.push(await run('without a shadow', plain!.key)),
      async () => withShadow.push(await run('with a shadow', shadowed!.key)),
    ];
    if (round % 2 === 1) sides.reverse();
    for (const side of sides) await side();
  }

  const summary = (runs: Measurement[]) => ({
    medianRps: round(median(runs.map((m) => m.rps)), 0),
    rps: runs.map((m) => round(m.rps, 0)),
    medianP99Ms: round(median(runs.map((m) => m.p99Ms))),
  });
  const a = summary(without);
  const b = summary(withShadow);
  log(`with a shadow / without: ${round(b.medianRps / a.medianRps, 2)}`);
  console.log(
    formatTable(
      ['policy', 'median req/s', 'req/s per round', 'median p99 ms'],
      [
        ['without a shadow', a.medianRps, a.rps.join(', '), a.medianP99Ms],
        ['with a shadow', b.medianRps, b.rps.join(', '), b.medianP99Ms],
      ],
    ),
  );
  console.log(
    JSON.stringify({
      benchmark: 'shadow-creation',
      settings: { rounds: ROUNDS, durationS: DURATION_S, connections: CONNECTIONS },
      without: a,
      withShadow: b,
      ratio: round(b.medianRps / a.medianRps, 3),
    }),
  );
});
