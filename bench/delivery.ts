// Webhook delivery and expiry: one web and one worker process (children), a receiver (child),
// and, as the ceiling, bare BullMQ on the same Redis.
//
//   npm run bench:delivery                    defaults below, one run (it is long: ~6-10 min)
//   BENCH_RUNS=3 npm run bench:delivery       medians over runs (counts of problems are totals)
//
// 1. Ceiling: N trivial jobs added with addBulk in chunks; a Worker (child process, same options
//    and concurrency as the delivery worker) whose processor returns at once; jobs/s from the
//    first add to the last completion.
// 2. Decision-to-delivery latency, 1 endpoint: pending approvals decided over the API, paced
//    (low load) and then as fast as possible (high load); per approval, delivery arrival at the
//    receiver minus the arrival of its decision's response. Every delivery is checked: exactly
//    one per approval, duplicates (same event id twice) counted.
// 3. Delivery throughput to 1, 10 and 100 endpoints of one org: a batch of decisions as fast as
//    possible; deliveries/s at the receiver from the first to the last arrival, against step 1.
// 4. Expiry lateness: approvals created so that their deadlines fall within a few seconds;
//    decided_at - expires_at from the database once a long-poll on each has seen it settle.
// 5. (BENCH_PROFILE=1, default) where the worker's time goes: the 10-endpoint batch again with
//    the worker under `--cpu-prof`, after everything measured above, so it distorts nothing.
//
// The web and worker processes run compiled (`npm run build`, then `node dist/...`) unless
// BENCH_COMPILED=0 (then `node --import tsx`); BENCH_BUILD=0 uses dist/ as it is. Sizes are
// overridable, see delivery/settings.ts. The last line of stdout is the figures as JSON.
//
// One file per step in bench/delivery/ (ceiling, latency, throughput, expiry, profile), on a rig
// (rig.ts: database, processes, endpoints) that they share; report.ts prints the figures.
import { measureCeiling } from './delivery/ceiling.js';
import { measureExpiry } from './delivery/expiry.js';
import { measureLatency } from './delivery/latency.js';
import { profileWorker } from './delivery/profile.js';
import { printReport } from './delivery/report.js';
import type { RunResult, ThroughputResult } from './delivery/results.js';
import { startRig } from './delivery/rig.js';
import { HIGH_CONCURRENCY, LATENCY_DECISIONS, LOW_CONCURRENCY, LOW_RATE, PROFILE, RUNS, THROUGHPUT } from './delivery/settings.js';
import { measureThroughput } from './delivery/throughput.js';
import { createPending } from './delivery/traffic.js';
import { log, runBenchmark } from './lib/run.js';

runBenchmark('bench:delivery', (RUNS * 25 + 15) * 60_000, async (cleanup) => {
  const rig = await startRig(cleanup);

  const runs: RunResult[] = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`--- run ${run}/${RUNS}`);
    const ceiling = await measureCeiling(run);

    const latencyIds = await createPending(rig.latencyOrg, 2 * LATENCY_DECISIONS);
    const low = await measureLatency(rig, 'low', latencyIds.slice(0, LATENCY_DECISIONS), {
      concurrency: LOW_CONCURRENCY,
      ratePerS: LOW_RATE,
    });
    const high = await measureLatency(rig, 'high', latencyIds.slice(LATENCY_DECISIONS), { concurrency: HIGH_CONCURRENCY });

    const throughput: ThroughputResult[] = [];
    for (const { endpoints, decisions } of THROUGHPUT) {
      throughput.push(await measureThroughput(rig, endpoints, decisions, ceiling.jobsPerS));
    }
    const expiry = await measureExpiry(rig);
    runs.push({ ceiling, latency: [low, high], throughput, expiry });
  }

  const profile = PROFILE ? await profileWorker(rig, runs[0]!.ceiling.jobsPerS) : undefined;
  printReport(rig, runs, profile);
});
