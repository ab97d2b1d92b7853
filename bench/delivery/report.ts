// The report of bench/delivery.ts: one table per step, the worker's warnings, the targets, a
// reading of where the time goes, and the figures as JSON on the last line of stdout.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { formatTable, round, verdict } from '../lib/figures.js';
import { formatStarts } from './arrivals.js';
import { formatCpu, formatPer } from './cpu-window.js';
import type { WorkerProfile } from './profile.js';
import { aggregate, type CeilingResult, type ExpiryResult, type LatencyResult, type RunResult, type ThroughputResult } from './results.js';
import type { DeliveryRig, RunMode } from './rig.js';
import {
  CEILING_CHUNK,
  CEILING_JOBS,
  DELIVERY_CONCURRENCY,
  ENDPOINT_CONCURRENCY,
  EXPIRY_APPROVALS,
  EXPIRY_SPREAD_S,
  EXPIRY_TIMEOUT_S,
  HIGH_CONCURRENCY,
  LATENCY_DECISIONS,
  LOW_CONCURRENCY,
  LOW_RATE,
  PROFILE_DECISIONS,
  PROFILE_ENDPOINTS,
  RUNS,
  TARGET_EXPIRY_P99_MS,
  TARGET_LOW_P99_MS,
  THROUGHPUT,
} from './settings.js';

interface Targets {
  /** Per throughput case; null where it has no target. */
  throughputMet: (boolean | null)[];
  lowMet: boolean;
  expiryMet: boolean;
  /** Every decided approval delivered to every endpoint, none with a second event. */
  allDelivered: boolean;
  /** Deliveries of the same event id to the same endpoint beyond the first. */
  duplicates: number;
}

/** Prints the report of the runs (medians; problem counts are totals), the JSON figures last. */
export function printReport(rig: DeliveryRig, runs: RunResult[], profile: WorkerProfile | undefined): void {
  const result = aggregate(runs);
  const problems = [...result.latency.map((l) => l.check), ...result.throughput.map((t) => t.check)];
  const targets: Targets = {
    throughputMet: THROUGHPUT.map(({ targetRatio }, i) =>
      targetRatio === null ? null : result.throughput[i]!.ratioToCeiling >= targetRatio,
    ),
    lowMet: result.latency[0]!.sinceResponseMs.p99 < TARGET_LOW_P99_MS && result.latency[0]!.check.missing === 0,
    expiryMet: result.expiry.latenessMs.p99 < TARGET_EXPIRY_P99_MS && result.expiry.notExpired === 0,
    allDelivered: problems.every((c) => c.missing === 0 && c.doubleEvents === 0 && c.unexpected === 0 && c.unparsable === 0),
    duplicates: problems.reduce((sum, c) => sum + c.duplicates, 0),
  };

  printHeader(rig.mode);
  printCeiling(result.ceiling);
  printLatency(result.latency);
  printThroughput(result.throughput, targets);
  printExpiry(result.expiry);
  if (profile) printProfile(profile);
  printWorkerProblems(rig.workerLogs);
  if (rig.duplicateReports.length > 0)
    console.log(`\nDuplicate deliveries (same event id at the same endpoint):\n   ${rig.duplicateReports.join('\n   ')}`);
  else console.log('No duplicate deliveries.');
  for (const note of rig.notes) console.log(`!!! ${note}`);
  printTargets(result, targets);
  printReading(result, profile);
  console.log(JSON.stringify(figuresJson(rig, result, runs, profile, targets)));
}

function printHeader(mode: RunMode): void {
  console.log(
    `\nWebhook delivery and expiry: one web and one worker process (${mode === 'compiled' ? 'compiled: node dist/src/server.js, node dist/workers/index.js' : 'from source: node --import tsx'}),`,
  );
  console.log(
    `receiver in its own process; WEBHOOK_DELIVERY_CONCURRENCY ${DELIVERY_CONCURRENCY}, WEBHOOK_ENDPOINT_CONCURRENCY ${ENDPOINT_CONCURRENCY}; ` +
      `${RUNS} run(s)${RUNS > 1 ? ', medians (problem counts are totals)' : ''}; ${os.cpus().length} cores`,
  );
  console.log(
    'CPU: percent of one core over the step; postgres = backends of the bench database; postgres (all) and redis also serve anyone else; ' +
      'machine: percent of all cores; everything else: the rest of the machine (other users), percent of one core.\n',
  );
}

function printCeiling(ceiling: CeilingResult): void {
  console.log(
    `1. Ceiling: bare BullMQ, ${CEILING_JOBS} trivial jobs (addBulk by ${CEILING_CHUNK}), worker concurrency ${DELIVERY_CONCURRENCY}\n`,
  );
  console.log(
    formatTable(
      ['jobs', 'first add to last completion (s)', 'jobs/s', 'adds done after (s)', 'CPU'],
      [[ceiling.jobs, ceiling.seconds, ceiling.jobsPerS, ceiling.addSeconds, formatCpu(ceiling.cpu)]],
    ),
  );
  console.log(`   CPU ms per job: ${formatPer(ceiling.cpuMsPerJob)}`);
}

function printLatency(latency: LatencyResult[]): void {
  console.log(`\n2. Decision to delivery, 1 endpoint: delivery arrival - decision response arrival (ms)\n`);
  console.log(
    formatTable(
      [
        'load',
        'decisions',
        'decisions/s',
        'decision p50/p99 ms',
        'delivered',
        'missing',
        'dupes',
        'p50',
        'p99',
        'max',
        'before resp.',
        'since sent p50/p99/max',
      ],
      latency.map((l) => [
        l.load === 'low' ? `low (${LOW_RATE}/s, ${LOW_CONCURRENCY} conc.)` : `high (${HIGH_CONCURRENCY} conc.)`,
        l.decisions,
        l.decisionsPerS,
        `${l.decisionResponseMs.p50} / ${l.decisionResponseMs.p99}`,
        l.check.delivered,
        l.check.missing,
        l.check.duplicates,
        l.sinceResponseMs.p50,
        l.sinceResponseMs.p99,
        l.sinceResponseMs.max,
        l.beforeResponse,
        `${l.sinceSentMs.p50} / ${l.sinceSentMs.p99} / ${l.sinceSentMs.max}`,
      ]),
    ),
  );
  for (const l of latency) {
    console.log(`   ${l.load}: CPU ${formatCpu(l.cpu)}; delivery jobs put back (endpoint busy): ${formatStarts(l.jobStarts)}`);
    console.log(`      p50 / p99 by tenth of the step, in send order (ms): ${l.byTenthMs.map((t) => `${t.p50}/${t.p99}`).join('  ')}`);
  }
  console.log(`\n   Where the time goes (ms, from the outbox, delivery and attempt rows; database and worker clocks are this machine's)\n`);
  console.log(
    formatTable(
      ['load', 'stage', 'p50', 'p99', 'max'],
      latency.flatMap((l) => Object.entries(l.stagesMs).map(([stage, st]) => [l.load, stage, st.p50, st.p99, st.max])),
    ),
  );
}

function printThroughput(throughput: ThroughputResult[], { throughputMet }: Targets): void {
  console.log(`\n3. Delivery throughput, decisions as fast as possible (${HIGH_CONCURRENCY} concurrent), one org\n`);
  console.log(
    formatTable(
      [
        'endpoints',
        'decisions',
        'decided in (s)',
        'deliveries',
        'missing',
        'dupes',
        'arrivals span (s)',
        'deliveries/s',
        'vs ceiling',
        'end-to-end/s',
        'longest gap ms',
        'target',
      ],
      throughput.map((t, i) => [
        t.endpoints,
        t.decisions,
        t.decideSeconds,
        t.check.delivered,
        t.check.missing,
        t.check.duplicates,
        t.arrivalSeconds,
        t.deliveriesPerS,
        `${round(t.ratioToCeiling * 100, 1)}%`,
        t.endToEndPerS,
        t.longestGapMs,
        throughputMet[i] === null ? '(none)' : verdict(throughputMet[i]!),
      ]),
    ),
  );
  for (const t of throughput) {
    console.log(
      `   ${t.endpoints} endpoint(s): CPU ${formatCpu(t.cpu)}; delivery jobs put back (endpoint busy): ${formatStarts(t.jobStarts)}`,
    );
    console.log(`      CPU ms per delivery: ${formatPer(t.cpuMsPerDelivery)}`);
  }
}

function printExpiry(e: ExpiryResult): void {
  console.log(
    `\n4. Expiry lateness: ${e.approvals} approvals, timeoutSeconds ${EXPIRY_TIMEOUT_S}, created over ${EXPIRY_SPREAD_S} s (deadlines within ${e.expiresWindowS} s)\n`,
  );
  console.log(
    formatTable(
      ['measure', 'p50 ms', 'p99 ms', 'max ms', 'min ms'],
      [
        ['decided_at - expires_at (database)', e.latenessMs.p50, e.latenessMs.p99, e.latenessMs.max, e.latenessMs.min],
        [
          'long-poll answer - expiresAt (upper bound)',
          e.longPollLatenessMs.p50,
          e.longPollLatenessMs.p99,
          e.longPollLatenessMs.max,
          e.longPollLatenessMs.min,
        ],
      ],
    ),
  );
  console.log(
    `   expired ${e.expired}, not expired ${e.notExpired}, settled before their deadline ${e.earlyCount}, waiter errors ${e.waiterErrors}; ` +
      `settled by ${JSON.stringify(e.settledBy)}; CPU ${formatCpu(e.cpu)}`,
  );
}

function printProfile(profile: WorkerProfile): void {
  const busy = profile.totalMs - profile.idleMs;
  console.log(
    `\n5. Where the worker's time goes: ${PROFILE_DECISIONS} decisions x ${PROFILE_ENDPOINTS} endpoints again, worker under --cpu-prof ` +
      `(${profile.deliveriesPerS} deliveries/s, worker ${profile.workerCpu}% of a core; profile ${round(profile.totalMs / 1000, 1)} s, ` +
      `${round(busy / 1000, 1)} s busy, includes start-up)\n`,
  );
  const table = (title: string, rows: { origin: string; ms: number }[]) =>
    formatTable(
      [title, 'ms', '% of busy'],
      rows
        .filter((o) => o.origin !== '(idle)')
        .slice(0, 12)
        .map((o) => [o.origin, round(o.ms, 0), `${round((100 * o.ms) / busy, 1)}%`]),
    );
  console.log(table('self time by origin', profile.byOrigin));
  console.log('');
  console.log(table('self time charged to the calling package', profile.byCaller));
  console.log('');
  console.log(
    formatTable(
      ['busiest functions (self time)', 'origin', 'ms', '% of busy'],
      profile.byFunction
        .filter((f) => !f.fn.startsWith('(idle)'))
        .slice(0, 15)
        .map((f) => [f.fn.length > 90 ? `${f.fn.slice(0, 87)}...` : f.fn, f.origin, round(f.ms, 0), `${round((100 * f.ms) / busy, 1)}%`]),
    ),
  );
}

/** Worker warnings and errors: the relay and delivery failures show up here. */
function printWorkerProblems(workerLogs: string[]): void {
  const workerProblems = new Map<string, { count: number; example: string }>();
  for (const file of workerLogs) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line) as { level: number; msg: string; err?: { message?: string } };
        if (entry.level < 40) continue;
        const known = workerProblems.get(entry.msg) ?? { count: 0, example: entry.err?.message ?? '' };
        known.count++;
        workerProblems.set(entry.msg, known);
      } catch {
        // not a log line
      }
    }
  }
  console.log(
    workerProblems.size === 0
      ? '\nWorker log: no warnings or errors.'
      : `\nWorker log warnings/errors:\n${[...workerProblems].map(([msg, p]) => `   ${p.count} x ${msg}${p.example ? ` (e.g. ${p.example.slice(0, 160)})` : ''}`).join('\n')}`,
  );
}

function printTargets(result: RunResult, { throughputMet, lowMet, expiryMet, allDelivered, duplicates }: Targets): void {
  const [low, high] = result.latency as [LatencyResult, LatencyResult];
  const e = result.expiry;
  console.log(`\nTargets:`);
  result.throughput.forEach((t, i) => {
    const targetRatio = THROUGHPUT[i]!.targetRatio;
    const figure = `delivery throughput to ${t.endpoints} endpoint(s) ${t.deliveriesPerS}/s = ${round(t.ratioToCeiling * 100, 1)}% of the bare BullMQ ceiling (${result.ceiling.jobsPerS} jobs/s)`;
    console.log(
      targetRatio === null
        ? `  (no target) ${figure}: as fast as the decisions are made`
        : `  ${verdict(throughputMet[i]!)}: ${figure}; target >= ${targetRatio * 100}%`,
    );
  });
  console.log(`  ${verdict(lowMet)}: decision-to-delivery p99 at low load ${low.sinceResponseMs.p99} ms; target < ${TARGET_LOW_P99_MS} ms`);
  console.log(`  (no target) decision-to-delivery at high load: p50 ${high.sinceResponseMs.p50} ms, p99 ${high.sinceResponseMs.p99} ms`);
  console.log(
    `  ${verdict(expiryMet)}: expiry lateness p99 ${e.latenessMs.p99} ms (decided_at - expires_at); target < ${TARGET_EXPIRY_P99_MS} ms`,
  );
  console.log(`  ${verdict(allDelivered)}: every decided approval delivered to every endpoint (none missing, no second event)`);
  console.log(`  ${verdict(allDelivered && duplicates === 0)}: ... and exactly once: ${duplicates} duplicate deliveries (same event id)`);
}

/** Where the time goes, in one line per step, from the figures above. */
function printReading(result: RunResult, profile: WorkerProfile | undefined): void {
  console.log(`\nReading:`);
  for (const l of result.latency) {
    const [stage, st] = Object.entries(l.stagesMs).sort(([, a], [, b]) => b.p50 - a.p50)[0]!;
    console.log(
      `  latency ${l.load}: largest stage '${stage}' (p50 ${st.p50} of ${l.sinceResponseMs.p50} ms); ` +
        `delivery jobs started ${l.jobStarts.meanStarts} times on average (${l.jobStarts.putBackPct}% put back at least once)`,
    );
  }
  for (const t of result.throughput) {
    const busiest = Object.entries(t.cpu)
      .filter(([name]) => !['machine', 'postgres (all)', 'everything else', 'bench'].includes(name))
      .sort(([, a], [, b]) => b - a)
      .slice(0, 2)
      .map(([name, pct]) => `${name} ${pct}%`)
      .join(', ');
    const perDelivery = Object.values(t.cpuMsPerDelivery).reduce((a, b) => a + b, 0);
    const perJob = Object.values(result.ceiling.cpuMsPerJob).reduce((a, b) => a + b, 0);
    console.log(
      `  throughput ${t.endpoints}: ${round(perDelivery, 2)} CPU ms per delivery (worker+web+postgres+redis) vs ${round(perJob, 3)} per bare job ` +
        `(${round(perDelivery / perJob, 0)}x); busiest ${busiest}; machine ${t.cpu.machine}% of all cores; ` +
        `jobs started ${t.jobStarts.meanStarts} times on average; longest silence ${t.longestGapMs} ms`,
    );
  }
  if (profile) {
    const busy = profile.totalMs - profile.idleMs;
    const top = profile.byCaller
      .filter((o) => o.origin !== '(idle)')
      .slice(0, 4)
      .map((o) => `${o.origin} ${round((100 * o.ms) / busy, 0)}%`)
      .join(', ');
    console.log(`  worker profile: ${top} of its busy time (native calls charged to the calling package)`);
  }
}

function figuresJson(rig: DeliveryRig, result: RunResult, runs: RunResult[], profile: WorkerProfile | undefined, targets: Targets) {
  const { throughputMet, lowMet, expiryMet, allDelivered, duplicates } = targets;
  return {
    benchmark: 'delivery',
    at: new Date().toISOString(),
    mode: rig.mode,
    settings: {
      runs: RUNS,
      deliveryConcurrency: DELIVERY_CONCURRENCY,
      endpointConcurrency: ENDPOINT_CONCURRENCY,
      ceilingJobs: CEILING_JOBS,
      latencyDecisions: LATENCY_DECISIONS,
      lowRate: LOW_RATE,
      lowConcurrency: LOW_CONCURRENCY,
      highConcurrency: HIGH_CONCURRENCY,
      throughput: THROUGHPUT,
      expiry: { approvals: EXPIRY_APPROVALS, timeoutSeconds: EXPIRY_TIMEOUT_S, spreadS: EXPIRY_SPREAD_S },
    },
    result,
    runs: RUNS > 1 ? runs : undefined,
    profile: profile && {
      deliveriesPerS: profile.deliveriesPerS,
      totalMs: round(profile.totalMs, 0),
      idleMs: round(profile.idleMs, 0),
      byOrigin: profile.byOrigin.slice(0, 14).map((o) => ({ ...o, ms: round(o.ms, 0) })),
      byCaller: profile.byCaller.slice(0, 14).map((o) => ({ ...o, ms: round(o.ms, 0) })),
      byFunction: profile.byFunction.slice(0, 15).map((f) => ({ ...f, ms: round(f.ms, 0) })),
    },
    targets: {
      throughputRatioMet: Object.fromEntries(result.throughput.map((t, i) => [t.endpoints, throughputMet[i]])),
      lowLoadP99Under100Ms: lowMet,
      expiryP99Under100Ms: expiryMet,
      allDelivered,
      allDeliveredExactlyOnce: allDelivered && duplicates === 0,
    },
    notes: rig.notes,
  };
}
