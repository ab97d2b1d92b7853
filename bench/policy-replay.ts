// One organization replays a draft policy against 10,000 stored requests, back to back, while
// another sends ordinary creations at a steady rate. Prints each replay's time and the other
// organization's latency without and with the replays running. The web process runs compiled, as
// the Procfile does.
//
//   npm run bench:policy-replay                        15 s per phase
//   BENCH_DURATION=5 BENCH_REQUESTS=2000 npm run bench:policy-replay
//
// BENCH_RATE (default 100) is the other organization's creations per second. The last line of
// stdout is the figures as JSON.
import pg from 'pg';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase, REDIS_URL } from './lib/fixtures.js';
import { formatTable, median, percentile, round } from './lib/figures.js';
import { expectJson, putPolicy } from './lib/http.js';
import { answers200, buildOnce, startNodeProcess } from './lib/processes.js';
import { envNumber, log, runBenchmark } from './lib/run.js';
import { steadyCreations } from './lib/steady-creations.js';

const DURATION_S = envNumber('BENCH_DURATION', 15);
const RATE = envNumber('BENCH_RATE', 100);
const REQUESTS = Math.round(envNumber('BENCH_REQUESTS', 10_000));
const DATABASE = 'approval_gate_bench_replay';
const REDIS_PREFIX = 'agbenchreplay';
const API_PORT = 3913;

/** The replaying organization's history: requests of amounts 0-199 under `amount <= 100` (allowed) or above (reviewed). */
async function seedHistory(dbUrl: string, orgId: string): Promise<void> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO approvals (id, org_id, status, action, payload, policy_key, created_at, on_timeout, policy_version, policy_outcome)
       SELECT gen_random_uuid(), $1, 'approved', 'refund', jsonb_build_object('amount', (i % 200)::float8, 'currency', 'EUR'),
              'refunds', now() - i * interval '1 second', 'expire', 1, CASE WHEN i % 200 <= 100 THEN 'allow' ELSE 'review' END
       FROM generate_series(1, $2::integer) AS i`,
      [orgId, REQUESTS],
    );
  } finally {
    await client.end();
  }
}

runBenchmark('bench:policy-replay', 2 * (DURATION_S + 60) * 1000 + 900_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [replayer, other] = await createOrgs(dbUrl, 2);
  const build = await buildOnce();
  if (build.code !== 0) throw new Error(`npm run build failed:\n${build.output}`);
  const api = await startNodeProcess({
    label: 'web',
    args: ['dist/src/server.js'],
    env: { NODE_ENV: 'production', PORT: String(API_PORT), DATABASE_URL: dbUrl, REDIS_URL, REDIS_PREFIX, LOG_LEVEL: 'warn' },
    port: API_PORT,
    isReady: () => answers200(API_PORT, '/readyz'),
  });
  cleanup(() => api.stop());
  await putPolicy(API_PORT, replayer!.key, 'refunds', { rules: [{ when: 'payload.amount <= 100.0', outcome: 'allow' }] });
  await putPolicy(API_PORT, other!.key, 'ordinary', { rules: [{ when: 'payload.amount <= 100.0', outcome: 'allow' }] });
  await seedHistory(dbUrl, replayer!.orgId);
  const load = { port: API_PORT, key: other!.key, policyKey: 'ordinary', rate: RATE };
  log(`web pid ${api.pid}; ${REQUESTS} stored requests; the other organization sends ${RATE} creations/s`);

  const draft = { policy: { rules: [{ when: 'payload.amount <= 50.0', outcome: 'allow' }] }, limit: REQUESTS };
  const replay = async () => {
    const started = performance.now();
    const answer = await expectJson(200, {
      port: API_PORT,
      method: 'POST',
      path: '/v1/policies/refunds/replay',
      key: replayer!.key,
      body: draft,
    });
    if (answer.evaluated !== REQUESTS) throw new Error(`the replay evaluated ${answer.evaluated} requests, not ${REQUESTS}`);
    return performance.now() - started;
  };
  await steadyCreations(load, 3); // warm-up
  await replay();

  const quiet = await steadyCreations(load, DURATION_S);
  const replayTimes: number[] = [];
  let replaying = true;
  const replays = (async () => {
    while (replaying) replayTimes.push(await replay());
  })();
  const busy = await steadyCreations(load, DURATION_S);
  replaying = false;
  await replays;

  const row = (name: string, run: { latencies: number[]; failures: number }) => [
    name,
    round(percentile(run.latencies, 50)),
    round(percentile(run.latencies, 99)),
    round(Math.max(...run.latencies)),
    run.failures,
  ];
  console.log(
    formatTable(
      ['phase', 'other p50 ms', 'other p99 ms', 'other max ms', 'other failed'],
      [row('no replay', quiet), row(`replays of ${REQUESTS} back to back`, busy)],
    ),
  );
  const times = { count: replayTimes.length, medianMs: round(median(replayTimes)), maxMs: round(Math.max(...replayTimes)) };
  console.log(`replay of ${REQUESTS} requests: median ${times.medianMs} ms, max ${times.maxMs} ms over ${times.count} replays`);
  console.log(
    JSON.stringify({
      benchmark: 'policy-replay',
      settings: { durationS: DURATION_S, rate: RATE, requests: REQUESTS },
      replay: times,
      other: { quietP99Ms: round(percentile(quiet.latencies, 99)), busyP99Ms: round(percentile(busy.latencies, 99)) },
    }),
  );
});
