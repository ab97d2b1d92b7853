// Expiry lateness: how long after its deadline an approval is `expired`, against bare BullMQ
// delayed jobs due at the same moments, measured in turns in the same run.
//
//   npm run bench:expiry-lateness
//   BENCH_RUNS=5 BENCH_EXPIRY_APPROVALS=1000 npm run bench:expiry-lateness
//
// Each run, in turn:
// 1. Ceiling: BENCH_EXPIRY_APPROVALS trivial jobs, each delayed so that it falls due at the pace
//    the approvals below do (BENCH_EXPIRY_SPREAD_S), run by a Worker in a child process with the
//    expiry queue's concurrency; lateness = the processor's start - (the add + the delay).
// 2. The service: the expiry step of bench:delivery (one web and one worker process, compiled):
//    approvals with a BENCH_EXPIRY_TIMEOUT_S timeout created over BENCH_EXPIRY_SPREAD_S, one
//    long-poll each; lateness = decided_at - expires_at from the database. Where the time went,
//    from the expiry jobs Redis keeps: deadline -> job added (the deadline watcher; negative when
//    handed over ahead, delayed), deadline -> job started (the watcher and the queue; negative:
//    started EXPIRY_LEAD_MS ahead), started -> decided_at (stamped once the job has read the
//    approval and waited for the deadline, before its commit).
// The ratio is the service's p99 over the ceiling's p99 of the same run. The last line of stdout
// is the figures as JSON.
import { Queue } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { approvalExpiryJob } from '../src/jobs/approval-expiry.js';
import { startCeilingWorker } from './delivery/ceiling.js';
import { measureExpiry } from './delivery/expiry.js';
import { startRig, type DeliveryRig } from './delivery/rig.js';
import { EXPIRY_APPROVALS, EXPIRY_SPREAD_S, EXPIRY_TIMEOUT_S, REDIS_PREFIX, RUNS, TARGET_EXPIRY_P99_MS } from './delivery/settings.js';
import { median, round, stats, verdict, formatTable, type Stats } from './lib/figures.js';
import { HOST } from './lib/fixtures.js';
import { log, runBenchmark } from './lib/run.js';

/** What the worker under test runs its expiry jobs with: the ceiling worker runs as many at once. */
const { EXPIRY_CONCURRENCY } = loadConfig();

interface RunFigures {
  ceiling: Stats;
  service: Stats;
  longPoll: Stats;
  stages: Record<string, Stats>;
  expired: number;
  notExpired: number;
  early: number;
  settledBy: Record<string, number>;
  ratioP99: number;
}

async function measureCeiling(run: number): Promise<Stats> {
  let latenessMs: number[] | undefined;
  const { child, queue, stop } = await startCeilingWorker({
    queueName: `expiry-ceiling-${run}`,
    concurrency: EXPIRY_CONCURRENCY,
    jobs: EXPIRY_APPROVALS,
    lockDurationMs: 30_000,
    lateness: true,
    onMessage: (message) => {
      if (message.latenessMs) latenessMs = message.latenessMs;
    },
  });
  try {
    await queue.waitUntilReady();
    // Added at the pace of the approvals' creations, each due EXPIRY_TIMEOUT_S after its add.
    const startedAt = Date.now();
    const perJobMs = (EXPIRY_SPREAD_S * 1000) / EXPIRY_APPROVALS;
    for (let i = 0; i < EXPIRY_APPROVALS; i++) {
      const wait = startedAt + i * perJobMs - Date.now();
      if (wait >= 1) await sleep(wait);
      await queue.add('expire', { i }, { delay: EXPIRY_TIMEOUT_S * 1000, attempts: 5, backoff: { type: 'exponential', delay: 1000 } });
    }
    const giveUpAt = Date.now() + (EXPIRY_TIMEOUT_S + 90) * 1000;
    while (!latenessMs) {
      if (child.exited()) throw new Error(`the ceiling worker exited:\n${child.stderrTail()}`);
      if (Date.now() > giveUpAt) throw new Error('the ceiling worker did not run its jobs within 90 s of their deadlines');
      await sleep(20);
    }
    const result = stats(latenessMs);
    log(`ceiling: ${EXPIRY_APPROVALS} delayed jobs, lateness p50 ${result.p50} ms, p99 ${result.p99} ms, max ${result.max} ms`);
    return result;
  } finally {
    await stop();
  }
}

/** Where each expiry's lateness went, from the jobs Redis keeps of the expiry queue. */
async function expiryStages(rig: DeliveryRig, deadlines: Map<string, number>): Promise<Record<string, Stats>> {
  const queue = new Queue(approvalExpiryJob.queue, { connection: { host: HOST, port: 6379 }, prefix: REDIS_PREFIX });
  const client = new pg.Client({ connectionString: rig.dbUrl });
  await client.connect();
  try {
    const jobs = await queue.getJobs(['completed'], 0, -1);
    const { rows } = await client.query<{ id: string; decided_at: Date }>(
      `SELECT id, decided_at FROM approvals WHERE id = ANY($1::uuid[]) AND status = 'expired'`,
      [[...deadlines.keys()]],
    );
    const decidedAt = new Map(rows.map((row) => [row.id, row.decided_at.getTime()]));
    const handover: number[] = [];
    const started: number[] = [];
    const settling: number[] = [];
    for (const job of jobs) {
      const { approvalId } = job.data as { approvalId: string };
      const deadline = deadlines.get(approvalId);
      const decided = decidedAt.get(approvalId);
      if (deadline === undefined || decided === undefined || job.processedOn === undefined) continue;
      handover.push(job.timestamp - deadline);
      started.push(job.processedOn - deadline);
      settling.push(decided - job.processedOn);
    }
    return {
      'deadline -> job added (watcher; negative: ahead)': stats(handover),
      'deadline -> job started (watcher and queue)': stats(started),
      'started -> decided_at stamped (the job reads the approval, waits out its lead)': stats(settling),
    };
  } finally {
    await client.end();
    await queue.close();
  }
}

runBenchmark('bench:expiry-lateness', (RUNS * 4 + 10) * 60_000, async (cleanup) => {
  const rig = await startRig(cleanup);
  const runs: RunFigures[] = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`--- run ${run}/${RUNS}`);
    await rig.settle();
    const ceiling = await measureCeiling(run);
    const deadlines = new Map<string, number>();
    const expiry = await measureExpiry(rig, deadlines);
    const stages = await expiryStages(rig, deadlines);
    runs.push({
      ceiling,
      service: expiry.latenessMs,
      longPoll: expiry.longPollLatenessMs,
      stages,
      expired: expiry.expired,
      notExpired: expiry.notExpired,
      early: expiry.earlyCount,
      settledBy: expiry.settledBy,
      ratioP99: round(expiry.latenessMs.p99 / Math.max(ceiling.p99, 1), 2),
    });
  }

  console.log(
    `\nExpiry lateness, ${EXPIRY_APPROVALS} approvals due within ${EXPIRY_SPREAD_S} s (timeout ${EXPIRY_TIMEOUT_S} s), ${rig.mode}, ${RUNS} run(s):\n`,
  );
  console.log(
    formatTable(
      ['run', 'service p50', 'service p99', 'max', 'long-poll p99', 'ceiling p50', 'ceiling p99', 'p99 ratio', 'not expired', 'early'],
      runs.map((r, i) => [
        i + 1,
        r.service.p50,
        r.service.p99,
        r.service.max,
        r.longPoll.p99,
        r.ceiling.p50,
        r.ceiling.p99,
        r.ratioP99,
        r.notExpired,
        r.early,
      ]),
    ),
  );
  console.log('\nWhere the time went (ms), per run:\n');
  console.log(
    formatTable(
      ['run', 'stage', 'p50', 'p99', 'max'],
      runs.flatMap((r, i) => Object.entries(r.stages).map(([stage, s]) => [i + 1, stage, s.p50, s.p99, s.max])),
    ),
  );
  const p99 = median(runs.map((r) => r.service.p99));
  const lost = runs.reduce((sum, r) => sum + r.notExpired + r.early, 0);
  console.log(
    `\nmedian p99 ${p99} ms (target < ${TARGET_EXPIRY_P99_MS} ms): ${verdict(p99 < TARGET_EXPIRY_P99_MS)}; median ratio to the ceiling ${median(runs.map((r) => r.ratioP99))}; approvals not expired or expired early: ${lost}`,
  );
  for (const note of rig.notes) console.log(`NOTE: ${note}`);
  console.log(JSON.stringify({ mode: rig.mode, runs }));
  if (lost > 0) throw new Error(`${lost} approvals were not expired, or expired before their deadline`);
});
