// What signed checkpoints (docs/audit.md) cost, in one run:
//  1. creation throughput (pending, one organization, where every 1,000th event is signed) with a
//     worker that signs checkpoints against the same worker without a signing key, rounds
//     interleaved (without, with, with, without ...);
//  2. full-chain verification (GET /v1/audit?verify=true) of a chain of BENCH_AUDIT_EVENTS events
//     with a checkpoint every 1,000 events against a chain of the same events without any,
//     interleaved too.
//
//   npm run bench:checkpoints                        1,000,000 events per chain, 3 rounds of each
//   BENCH_AUDIT_EVENTS=100000 BENCH_RUNS=1 BENCH_DURATION=5 npm run bench:checkpoints
//
// BENCH_DURATION (default 15 s) and BENCH_WARMUP (default 5 s) time each creation round. The web
// and worker processes run compiled, as the Procfile runs them. The last line of stdout is the
// figures as JSON.
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDataLayer, type DataLayer } from '../src/data/database.js';
import { AuditTree } from '../src/modules/audit/audit-tree.js';
import { CheckpointService } from '../src/modules/audit/checkpoint-service.js';
import { appendSyntheticAuditEvents } from '../src/modules/audit/synthetic-audit-events.js';
import { formatTable, median, round } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase, REDIS_URL } from './lib/fixtures.js';
import { expectJson, putPolicy } from './lib/http.js';
import { measure, problemsOf, type Measurement } from './lib/load.js';
import { startWebServer, startWorker } from './lib/processes.js';
import { envInt, envNumber, log, runBenchmark } from './lib/run.js';

const EVENTS = envInt('BENCH_AUDIT_EVENTS', 1_000_000);
const RUNS = envInt('BENCH_RUNS', 3);
const LOAD = { connections: 50, warmupS: envNumber('BENCH_WARMUP', 5), durationS: envNumber('BENCH_DURATION', 15) };
const CHECKPOINT_EVERY = 1000;
const DATABASE = 'approval_gate_bench_checkpoints';
const REDIS_PREFIX = 'agbenchcheckpoints';
const PORT = 3931;

const signingKey = generateKeyPairSync('ed25519').privateKey;
const AUDIT_SIGNING_KEY = signingKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');

async function seconds(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

async function chainHead(data: DataLayer, orgId: string): Promise<number> {
  const [row] = await data.sql.query<{ seq: string }>(null, 'SELECT seq FROM audit_chain_heads WHERE org_id = $1', [orgId]);
  return Number(row?.seq ?? 0);
}

/**
 * Waits until the worker has signed every multiple of CHECKPOINT_EVERY in (after, upTo]: the
 * signing worker must keep up, and a round ends only when what it owed is signed.
 */
async function awaitCheckpoints(data: DataLayer, orgId: string, after: number, upTo: number): Promise<number> {
  const owed = Math.floor(upTo / CHECKPOINT_EVERY) - Math.floor(after / CHECKPOINT_EVERY);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [row] = await data.sql.query<{ count: string }>(
      null,
      'SELECT count(*) FROM audit_checkpoints WHERE org_id = $1 AND seq > $2 AND seq <= $3',
      [orgId, after, upTo],
    );
    if (Number(row!.count) === owed) return owed;
    if (Date.now() > deadline) throw new Error(`${row!.count} of ${owed} checkpoints signed after 60 s`);
    await sleep(200);
  }
}

runBenchmark('bench:checkpoints', 60 * 60_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
    log(`cleaned up: dropped ${DATABASE}, Redis keys ${REDIS_PREFIX}:*`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [creator, plainChain, signedChain] = await createOrgs(dbUrl, 3);
  const data = createDataLayer(dbUrl, { size: 2, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  cleanup(() => data.close());

  log(`appending ${EVENTS} events to each of two chains in SQL, and signing one of them every ${CHECKPOINT_EVERY} events ...`);
  await appendSyntheticAuditEvents(data.sql, plainChain!.orgId, EVENTS);
  await appendSyntheticAuditEvents(data.sql, signedChain!.orgId, EVENTS);
  const checkpoints = new CheckpointService(data, signingKey, new AuditTree(data), 'localhost');
  for (let seq = CHECKPOINT_EVERY; seq <= EVENTS; seq += CHECKPOINT_EVERY) await checkpoints.checkpoint(signedChain!.orgId, seq);
  // Their outbox rows would keep the worker relaying two million events nobody consumes.
  await data.sql.query(null, 'DELETE FROM outbox_messages WHERE org_id = ANY ($1::uuid[])', [[plainChain!.orgId, signedChain!.orgId]]);
  await data.db.$executeRawUnsafe('VACUUM ANALYZE audit_events, outbox_messages');

  const api = await startWebServer({ port: PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX });
  cleanup(() => api.stop());
  await putPolicy(PORT, creator!.key, 'bench-review', { defaultOutcome: 'review' });
  const creation = {
    name: 'pending, 1 org',
    port: PORT,
    method: 'POST' as const,
    path: '/v1/approvals',
    body: JSON.stringify({ action: 'refund', payload: { amount: 5000, currency: 'EUR' }, policyKey: 'bench-review', agent: 'bench' }),
    keys: [creator!.key],
    expectedStatus: 201,
  };

  const variants = [
    { name: 'worker without a signing key', signs: false, env: {} as Record<string, string> },
    { name: 'worker signing checkpoints', signs: true, env: { AUDIT_SIGNING_KEY, AUDIT_CHECKPOINT_EVERY: String(CHECKPOINT_EVERY) } },
  ];
  const creationRuns = variants.map(() => [] as Measurement[]);
  const signedDuringCreation = variants.map(() => 0);
  const verifySeconds = { plain: [] as number[], signed: [] as number[] };
  let verifiedCheckpoints = 0;
  for (let run = 1; run <= RUNS; run++) {
    log(`--- round ${run}/${RUNS}`);
    // Every other round runs the variants in the other order (ABBA), so a machine whose load
    // drifts during the run does not favour whichever goes first.
    const order = run % 2 === 1 ? [0, 1] : [1, 0];
    for (const i of order) {
      const variant = variants[i]!;
      const worker = await startWorker({
        label: variant.name,
        args: ['dist/workers/index.js'],
        env: { DATABASE_URL: dbUrl, REDIS_URL, REDIS_PREFIX, LOG_LEVEL: 'info', ...variant.env },
      });
      cleanup(() => worker.stop());
      const headBefore = await chainHead(data, creator!.orgId);
      creationRuns[i]!.push(await measure({ ...creation, name: variant.name }, LOAD));
      if (variant.signs)
        signedDuringCreation[i]! += await awaitCheckpoints(data, creator!.orgId, headBefore, await chainHead(data, creator!.orgId));
      await worker.stop();
    }
    const chains = [
      ['plain', plainChain!],
      ['signed', signedChain!],
    ] as const;
    for (const [chain, org] of run % 2 === 1 ? chains : [...chains].reverse()) {
      let verification: { intact: boolean; count: number; checkpoints?: number } | undefined;
      const took = await seconds(async () => {
        const body = await expectJson(200, {
          port: PORT,
          method: 'GET',
          path: '/v1/audit?verify=true&limit=1',
          key: org.key,
          timeoutMs: 600_000,
        });
        verification = body.verification;
      });
      if (!verification!.intact || verification!.count !== EVENTS) throw new Error(`${chain} chain: ${JSON.stringify(verification)}`);
      if (chain === 'signed') verifiedCheckpoints = verification!.checkpoints ?? 0;
      verifySeconds[chain].push(took);
      log(`verify ${chain} chain: ${round(took, 2)} s`);
    }
  }
  if (verifiedCheckpoints !== EVENTS / CHECKPOINT_EVERY)
    throw new Error(`verification checked ${verifiedCheckpoints} checkpoints, not ${EVENTS / CHECKPOINT_EVERY}`);
  const problems = creationRuns.flat().reduce((sum, m) => sum + problemsOf(m), 0);
  if (problems > 0) throw new Error(`${problems} creations did not answer 201`);

  const [without, withSigning] = creationRuns.map((runs) => median(runs.map((m) => m.rps)));
  const [plainVerify, signedVerify] = [median(verifySeconds.plain), median(verifySeconds.signed)];
  const figures = {
    events: EVENTS,
    runs: RUNS,
    creation: variants.map((variant, i) => ({
      worker: variant.name,
      rps: round(median(creationRuns[i]!.map((m) => m.rps)), 0),
      p99Ms: median(creationRuns[i]!.map((m) => m.p99Ms)),
      checkpointsSigned: signedDuringCreation[i]!,
    })),
    creationRatio: round(withSigning! / without!, 3),
    verify: {
      plainS: round(plainVerify, 2),
      signedS: round(signedVerify, 2),
      checkpoints: verifiedCheckpoints,
      ratio: round(signedVerify / plainVerify, 3),
    },
  };

  console.log(`\nCheckpointing's cost; medians of ${RUNS} interleaved round(s)\n`);
  console.log(
    formatTable(
      ['measurement', 'without checkpoints', 'with checkpoints', 'with / without'],
      [
        ['create, pending, 1 org, 50 connections (req/s)', figures.creation[0]!.rps, figures.creation[1]!.rps, figures.creationRatio],
        ['… p99 ms', figures.creation[0]!.p99Ms, figures.creation[1]!.p99Ms, ''],
        ['… checkpoints signed during the rounds', figures.creation[0]!.checkpointsSigned, figures.creation[1]!.checkpointsSigned, ''],
        [
          `verify ${EVENTS} events (s; ${verifiedCheckpoints} checkpoints)`,
          figures.verify.plainS,
          figures.verify.signedS,
          figures.verify.ratio,
        ],
      ],
    ),
  );
  console.log(JSON.stringify({ benchmark: 'checkpoints', at: new Date().toISOString(), ...figures }));
});
