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
// overridable, see the constants. The last line of stdout is the figures as JSON.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { webhookDeliveryJob } from '../src/consumers/webhooks/webhook-delivery.js';
import { retention } from '../src/jobs/job-queues.js';
import {
  createOrgs,
  deleteRedisKeys,
  dropDatabase,
  envNumber,
  expectJson,
  formatTable,
  HOST,
  log,
  mapConcurrent,
  percentile,
  putPolicy,
  recreateDatabase,
  requestJson,
  round,
  runBenchmark,
  waitUntilIdle,
  type BenchOrg,
} from './support.js';
import {
  cpuSpentMs,
  epochMs,
  machineCpuMs,
  processCpuMs,
  processGroupCpuMs,
  runCommand,
  startNodeProcess,
  summarizeCpuProfile,
  type NodeProcess,
  type ProfileSummary,
} from './delivery-support.js';

const int = (name: string, fallback: number) => Math.round(envNumber(name, fallback));
const flag = (name: string, fallback: boolean) => {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : !['0', 'false', 'no'].includes(raw.toLowerCase());
};

const RUNS = int('BENCH_RUNS', 1);
const COMPILED = flag('BENCH_COMPILED', true);
const BUILD = flag('BENCH_BUILD', true);
const PROFILE = flag('BENCH_PROFILE', true);
/** Passed to the worker, and the ceiling worker's concurrency. */
const DELIVERY_CONCURRENCY = int('WEBHOOK_DELIVERY_CONCURRENCY', 50);
/** Not set by the bench: the product default (5) unless the environment says otherwise. */
const ENDPOINT_CONCURRENCY = process.env.WEBHOOK_ENDPOINT_CONCURRENCY || '5 (default)';
const WORKER_LOCK_DURATION_MS = int('WORKER_LOCK_DURATION_MS', 30_000);
const CEILING_JOBS = int('BENCH_CEILING_JOBS', 20_000);
const CEILING_CHUNK = int('BENCH_CEILING_CHUNK', 1_000);
const LATENCY_DECISIONS = int('BENCH_LATENCY_DECISIONS', 10_000);
const LOW_RATE = envNumber('BENCH_LOW_RATE', 200);
const LOW_CONCURRENCY = int('BENCH_LOW_CONCURRENCY', 10);
const HIGH_CONCURRENCY = int('BENCH_HIGH_CONCURRENCY', 50);
const THROUGHPUT = [
  { endpoints: 1, decisions: int('BENCH_TP1_DECISIONS', 2_000) },
  { endpoints: 10, decisions: int('BENCH_TP10_DECISIONS', 2_000) },
  { endpoints: 100, decisions: int('BENCH_TP100_DECISIONS', 300) },
];
const EXPIRY_APPROVALS = int('BENCH_EXPIRY_APPROVALS', 1_000);
const EXPIRY_TIMEOUT_S = int('BENCH_EXPIRY_TIMEOUT_S', 5);
const EXPIRY_SPREAD_S = envNumber('BENCH_EXPIRY_SPREAD_S', 5);
const PROFILE_DECISIONS = int('BENCH_PROFILE_DECISIONS', 1_000);
const PROFILE_ENDPOINTS = 10;
/** A delivery wait gives up after this long without a new delivery. */
const STALL_S = envNumber('BENCH_STALL_S', 30);
const CREATE_CONCURRENCY = 50;
/** After the last expected delivery, how long late duplicates may still arrive before the records are read. */
const DUPLICATE_GRACE_MS = 1_500;

const DATABASE = 'approval_gate_bench_delivery';
const REDIS_PREFIX = 'agbench-delivery';
const CEILING_PREFIX = 'agbench-delivery-ceiling';
const REDIS_URL = `redis://${HOST}:6379`;
const API_PORT = 3904;
const RECEIVER_PORT = 3905;
const EVENT = 'approval.approved';
const LATENCY_PATH = '/hook/latency';

const TARGET_THROUGHPUT_RATIO = 0.3;
const TARGET_LOW_P99_MS = 250;
const TARGET_EXPIRY_P99_MS = 250;

const REVIEW_POLICY = 'bench-review';
const EXPIRY_POLICY = 'bench-expiry';
const APPROVAL_BODY = { action: 'refund', payload: { amount: 5000, currency: 'EUR' }, agent: 'bench-agent' };

// ---------------------------------------------------------------------------------------------
// Results

interface Stats {
  p50: number;
  p99: number;
  max: number;
  min: number;
}

interface CpuUse {
  /** Percent of one core, per process or process group; `machine` is percent of all cores together. */
  [name: string]: number;
}

interface CeilingResult {
  jobs: number;
  seconds: number;
  jobsPerS: number;
  addSeconds: number;
  cpu: CpuUse;
  /** CPU ms per job of the producer (this process), the ceiling worker and Redis. */
  cpuMsPerJob: Record<string, number>;
}

interface DeliveryCheck {
  expected: number;
  delivered: number;
  missing: number;
  duplicates: number;
  /** Two different event ids for the same approval at the same endpoint. */
  doubleEvents: number;
  unexpected: number;
  unparsable: number;
}

/** How often BullMQ handed each delivery job to the worker: more than once means it was put back (endpoint busy). */
interface JobStarts {
  /** The newest completed delivery jobs (BullMQ keeps 1,000). */
  sampled: number;
  putBackPct: number;
  meanStarts: number;
  maxStarts: number;
}

interface LatencyResult {
  load: string;
  decisions: number;
  failedDecisions: number;
  decisionsPerS: number;
  decisionResponseMs: Stats;
  check: DeliveryCheck;
  sinceResponseMs: Stats;
  sinceSentMs: Stats;
  /** Deliveries that arrived before the response to their decision did. */
  beforeResponse: number;
  /** The same latency per tenth of the step, decisions in the order they were sent: when did a backlog form? */
  byTenthMs: { p50: number; p99: number }[];
  /** Where the time goes, from the rows the web and worker wrote (ms). */
  stagesMs: Record<string, Stats>;
  jobStarts: JobStarts;
  cpu: CpuUse;
}

interface ThroughputResult {
  endpoints: number;
  decisions: number;
  failedDecisions: number;
  decideSeconds: number;
  check: DeliveryCheck;
  /** First to last arrival at the receiver. */
  arrivalSeconds: number;
  deliveriesPerS: number;
  /** First decision sent to last arrival. */
  endToEndPerS: number;
  ratioToCeiling: number;
  /** The longest silence at the receiver between two deliveries (a stall shows here). */
  longestGapMs: number;
  jobStarts: JobStarts;
  cpu: CpuUse;
  /** CPU ms per delivery of the worker, web, the bench database's backends and Redis. */
  cpuMsPerDelivery: Record<string, number>;
}

interface ExpiryResult {
  approvals: number;
  expiresWindowS: number;
  expired: number;
  notExpired: number;
  latenessMs: Stats;
  longPollLatenessMs: Stats;
  earlyCount: number;
  waiterErrors: number;
  settledBy: Record<string, number>;
  cpu: CpuUse;
}

interface RunResult {
  ceiling: CeilingResult;
  latency: LatencyResult[];
  throughput: ThroughputResult[];
  expiry: ExpiryResult;
}

function stats(values: number[]): Stats {
  if (values.length === 0) return { p50: NaN, p99: NaN, max: NaN, min: NaN };
  let max = -Infinity;
  let min = Infinity;
  for (const value of values) {
    if (value > max) max = value;
    if (value < min) min = value;
  }
  return { p50: round(percentile(values, 50)), p99: round(percentile(values, 99)), max: round(max), min: round(min) };
}

/** Counts of problems add up over runs; every other number is the median over runs. */
const TOTALS = new Set([
  'failedDecisions',
  'missing',
  'duplicates',
  'doubleEvents',
  'unexpected',
  'unparsable',
  'beforeResponse',
  'notExpired',
  'earlyCount',
  'waiterErrors',
]);

function aggregate<T>(runs: T[]): T {
  const first = runs[0] as unknown;
  if (typeof first === 'number') {
    const values = runs as unknown as number[];
    return round(percentile(values, 50), 3) as unknown as T;
  }
  if (Array.isArray(first)) return first.map((_, i) => aggregate(runs.map((run) => (run as unknown[])[i]))) as T;
  if (first === null || typeof first !== 'object') return first as T;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(first)) {
    const values = runs.map((run) => (run as Record<string, unknown>)[key]);
    out[key] = TOTALS.has(key) ? (values as number[]).reduce((a, b) => a + b, 0) : aggregate(values);
  }
  return out as T;
}

// ---------------------------------------------------------------------------------------------
// CPU windows

interface CpuSnapshot {
  at: number;
  processes: Record<string, number>;
  /** Backends of the bench database. */
  postgres: Map<number, number>;
  /** Every postgres process: also other clients of the server, and its background writers. */
  postgresAll: Map<number, number>;
  redis: Map<number, number>;
  machine: { busy: number; total: number };
}

function cpuSnapshot(processes: NodeProcess[]): CpuSnapshot {
  return {
    at: epochMs(),
    // This process too: it is the load generator (and, for the ceiling, the producer).
    processes: { bench: processCpuMs(process.pid), ...Object.fromEntries(processes.map((p) => [p.label, processCpuMs(p.pid)])) },
    postgres: processGroupCpuMs('postgres', ` ${DATABASE} `),
    postgresAll: processGroupCpuMs('postgres'),
    redis: processGroupCpuMs('redis-server'),
    machine: machineCpuMs(),
  };
}

function cpuUse(from: CpuSnapshot, to: CpuSnapshot): CpuUse {
  const wall = to.at - from.at;
  const pct = (ms: number) => round((100 * ms) / wall, 0);
  const use: CpuUse = {};
  for (const [label, ms] of Object.entries(to.processes)) use[label] = pct(ms - (from.processes[label] ?? 0));
  use.postgres = pct(cpuSpentMs(from.postgres, to.postgres));
  use['postgres (all)'] = pct(cpuSpentMs(from.postgresAll, to.postgresAll));
  use.redis = pct(cpuSpentMs(from.redis, to.redis));
  use.machine = round((100 * (to.machine.busy - from.machine.busy)) / (to.machine.total - from.machine.total), 0);
  // Everything else running on the machine meanwhile (other people's work: this machine is shared), in % of one core.
  const listed = Object.keys(to.processes).reduce((sum, label) => sum + use[label]!, 0) + use['postgres (all)']! + use.redis;
  use['everything else'] = Math.max(0, round(use.machine * os.cpus().length - listed, 0));
  return use;
}

/** CPU ms per unit of work, from percents of a core over a window. */
function cpuMsPer(cpu: CpuUse, windowMs: number, units: number, names: string[]): Record<string, number> {
  return Object.fromEntries(names.map((name) => [name, round(((cpu[name] ?? 0) / 100) * (windowMs / units), 3)]));
}

const formatPer = (per: Record<string, number>) =>
  Object.entries(per)
    .map(([name, ms]) => `${name} ${ms}`)
    .join(', ');

const formatCpu = (cpu: CpuUse) =>
  Object.entries(cpu)
    .map(([name, pct]) => `${name} ${pct}%`)
    .join(', ');

// ---------------------------------------------------------------------------------------------
// The benchmark

runBenchmark('bench:delivery', (RUNS * 25 + 15) * 60_000, async (cleanup) => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-delivery-'));
  cleanup(async () => {
    rmSync(tmp, { recursive: true, force: true });
    await dropDatabase(DATABASE);
    const deleted = (await deleteRedisKeys(REDIS_PREFIX)) + (await deleteRedisKeys(CEILING_PREFIX));
    log(`cleaned up: dropped ${DATABASE}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:* and ${CEILING_PREFIX}:*, removed ${tmp}`);
  });
  // Leftovers of an interrupted earlier run would be counted as this run's work.
  await deleteRedisKeys(REDIS_PREFIX);
  await deleteRedisKeys(CEILING_PREFIX);

  // Compiled unless asked otherwise; a failed build falls back to tsx, loudly.
  let mode: 'compiled' | 'tsx' = COMPILED ? 'compiled' : 'tsx';
  const notes: string[] = [];
  if (mode === 'compiled' && BUILD) {
    log('npm run build');
    const build = await runCommand('npm', ['run', 'build'], 300_000);
    if (build.code !== 0) {
      log(`!!! npm run build failed (code ${build.code}); running from source with tsx instead\n${build.output}`);
      notes.push(`npm run build failed (code ${build.code}): web and worker ran from source with tsx, not compiled.`);
      mode = 'tsx';
    }
  }
  if (mode === 'compiled' && !(existsSync('dist/src/server.js') && existsSync('dist/workers/index.js'))) {
    notes.push('dist/ has no build: web and worker ran from source with tsx, not compiled.');
    mode = 'tsx';
  }
  const entry = (compiled: string, source: string) => (mode === 'compiled' ? [compiled] : ['--import', 'tsx', source]);
  const webArgs = entry('dist/src/server.js', 'src/server.ts');
  const workerArgs = entry('dist/workers/index.js', 'workers/index.ts');
  log(`web: node ${webArgs.join(' ')}; worker: node ${workerArgs.join(' ')}`);

  const dbUrl = await recreateDatabase(DATABASE);
  // One org per scenario: latency, 1 / 10 / 100 endpoints, expiry.
  const [latencyOrg, tp1Org, tp10Org, tp100Org, expiryOrg] = await createOrgs(dbUrl, 5);
  const throughputOrgs = new Map<number, BenchOrg>([
    [1, tp1Org!],
    [10, tp10Org!],
    [100, tp100Org!],
  ]);
  log(`migrated ${DATABASE}, 5 organizations`);

  const productEnv = {
    NODE_ENV: 'production',
    DATABASE_URL: dbUrl,
    REDIS_URL,
    REDIS_PREFIX,
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_DELIVERY_CONCURRENCY: String(DELIVERY_CONCURRENCY),
  };
  const receiver = await startNodeProcess({
    label: 'receiver',
    args: ['--import', 'tsx', 'bench/delivery-receiver.ts'],
    env: { PORT: String(RECEIVER_PORT) },
    port: RECEIVER_PORT,
    isReady: async () => (await requestJson({ port: RECEIVER_PORT, method: 'GET', path: '/_bench/count' })).status === 200,
  });
  cleanup(() => receiver.stop());
  const web = await startNodeProcess({
    label: 'web',
    args: webArgs,
    env: { ...productEnv, PORT: String(API_PORT) },
    port: API_PORT,
    isReady: async () => (await requestJson({ port: API_PORT, method: 'GET', path: '/readyz' })).status === 200,
  });
  cleanup(() => web.stop());

  const workerLogs: string[] = [];
  const startWorker = async (label: string, extraNodeArgs: string[] = []): Promise<NodeProcess> => {
    const logFile = path.join(tmp, `${label}.log`);
    workerLogs.push(logFile);
    const started = await startNodeProcess({
      label: 'worker',
      args: [...extraNodeArgs, ...workerArgs],
      env: productEnv,
      stdoutFile: logFile,
      isReady: () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('"msg":"worker started"'),
    });
    cleanup(() => started.stop());
    return started;
  };
  let worker = await startWorker('worker');
  log(`receiver pid ${receiver.pid}, web pid ${web.pid}, worker pid ${worker.pid}`);

  // Policies and endpoints, over the API as a client would.
  for (const org of [latencyOrg!, ...throughputOrgs.values()]) {
    await putPolicy(API_PORT, org.key, REVIEW_POLICY, { defaultOutcome: 'review', timeoutSeconds: 86_400 });
  }
  await putPolicy(API_PORT, expiryOrg!.key, EXPIRY_POLICY, { defaultOutcome: 'review', timeoutSeconds: EXPIRY_TIMEOUT_S });
  const register = (org: BenchOrg, hookPath: string) =>
    expectJson(201, {
      port: API_PORT,
      method: 'POST',
      path: '/v1/webhooks',
      key: org.key,
      body: { url: `http://${HOST}:${RECEIVER_PORT}${hookPath}`, events: [EVENT] },
    });
  await register(latencyOrg!, LATENCY_PATH);
  const throughputPaths = new Map<number, string[]>();
  for (const [endpoints, org] of throughputOrgs) {
    const paths = Array.from({ length: endpoints }, (_, i) => `/hook/tp${endpoints}/${i}`);
    await mapConcurrent(paths, 10, (hookPath) => register(org, hookPath));
    throughputPaths.set(endpoints, paths);
  }
  log(`policies and ${1 + [...throughputOrgs.keys()].reduce((a, b) => a + b, 0)} webhook endpoints registered`);

  const watched = () => [web, worker, receiver];

  /** Lets the web and worker processes finish what earlier steps left (expiry scheduling, sweeps). */
  const settle = async () => {
    for (const p of [web, worker]) {
      await waitUntilIdle(p.pid, { windowMs: 1000, maxCpuFraction: 0.05, timeoutMs: 120_000 }).catch((error: unknown) =>
        log(`!!! ${p.label} not idle: ${String(error)}; going on`),
      );
    }
  };

  // --- helpers over the API and the receiver -------------------------------------------------

  const createPending = async (org: BenchOrg, count: number, policyKey = REVIEW_POLICY): Promise<string[]> => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: CREATE_CONCURRENCY });
    const started = epochMs();
    try {
      const ids = await mapConcurrent(
        Array.from({ length: count }, (_, i) => i),
        CREATE_CONCURRENCY,
        async () => {
          const created = await expectJson(201, {
            port: API_PORT,
            method: 'POST',
            path: '/v1/approvals',
            key: org.key,
            body: { ...APPROVAL_BODY, policyKey },
            agent,
          });
          if (created.status !== 'pending') throw new Error(`approval ${created.id} was created ${created.status}, not pending`);
          return created.id as string;
        },
      );
      const seconds = (epochMs() - started) / 1000;
      log(`created ${count} pending approvals in ${round(seconds)} s (${round(count / seconds, 0)}/s)`);
      return ids;
    } finally {
      agent.destroy();
    }
  };

  /** fn(i) for i < count, at most `concurrency` at once and, with a rate, none before its slot. */
  const runPaced = async (count: number, pacing: { concurrency: number; ratePerS?: number }, fn: (i: number) => Promise<void>) => {
    const started = epochMs();
    let inFlight = 0;
    let slotFreed: (() => void) | null = null;
    const running: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      if (pacing.ratePerS) {
        const wait = started + (i * 1000) / pacing.ratePerS - epochMs();
        if (wait >= 1) await sleep(wait);
      }
      while (inFlight >= pacing.concurrency) await new Promise<void>((resolve) => (slotFreed = resolve));
      inFlight++;
      running.push(
        fn(i).finally(() => {
          inFlight--;
          const wake = slotFreed;
          slotFreed = null;
          wake?.();
        }),
      );
    }
    await Promise.all(running);
  };

  interface DecisionBatch {
    ok: { approvalId: string; sentAt: number; doneAt: number }[];
    failed: string[];
    startedAt: number;
    endedAt: number;
  }

  const decideAll = async (org: BenchOrg, ids: string[], pacing: { concurrency: number; ratePerS?: number }): Promise<DecisionBatch> => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: pacing.concurrency });
    const ok: DecisionBatch['ok'] = [];
    const failed: string[] = [];
    const startedAt = epochMs();
    await runPaced(ids.length, pacing, async (i) => {
      const approvalId = ids[i]!;
      const sentAt = epochMs();
      try {
        const response = await requestJson({
          port: API_PORT,
          method: 'POST',
          path: `/v1/approvals/${approvalId}/decision`,
          key: org.key,
          body: { verdict: 'approved' },
          agent,
        });
        const doneAt = epochMs();
        if (response.status === 200 && response.body?.status === 'approved') ok.push({ approvalId, sentAt, doneAt });
        else failed.push(`HTTP ${response.status}: ${JSON.stringify(response.body).slice(0, 200)}`);
      } catch (error) {
        failed.push(String(error));
      }
    });
    agent.destroy();
    const endedAt = epochMs();
    const seconds = (endedAt - startedAt) / 1000;
    log(
      `decided ${ok.length} in ${round(seconds)} s (${round(ids.length / seconds, 0)}/s)${failed.length ? `, ${failed.length} FAILED` : ''}`,
    );
    for (const problem of failed.slice(0, 3)) log(`!!! decision failed: ${problem}`);
    return { ok, failed, startedAt, endedAt };
  };

  type DeliveryRecord = [arrivedAtMs: number, path: string, eventId: string, approvalId: string, type: string];
  const receiverCount = async () =>
    (await expectJson(200, { port: RECEIVER_PORT, method: 'GET', path: '/_bench/count' })) as {
      received: number;
      unique: number;
      unparsable: number;
    };
  const receiverReset = () => expectJson(200, { port: RECEIVER_PORT, method: 'POST', path: '/_bench/reset' });

  /** Until `expected` distinct deliveries arrived (or none for STALL_S); then the records, after a grace for duplicates. */
  const waitForDeliveries = async (expected: number, label: string) => {
    let last = -1;
    let lastProgressAt = Date.now();
    for (;;) {
      const dead = watched().find((p) => p.exited());
      if (dead) throw new Error(`the ${dead.label} process exited during ${label}:\n${dead.stderrTail()}`);
      const { unique } = await receiverCount();
      if (unique >= expected) break;
      if (unique !== last) {
        last = unique;
        lastProgressAt = Date.now();
      } else if (Date.now() - lastProgressAt > STALL_S * 1000) {
        log(`!!! ${label}: ${unique} of ${expected} deliveries, and none for ${STALL_S} s; going on without the rest`);
        break;
      }
      await sleep(50);
    }
    const cpuAtEnd = cpuSnapshot(watched());
    await sleep(DUPLICATE_GRACE_MS);
    const { unparsable } = await receiverCount();
    const records = (await expectJson(200, {
      port: RECEIVER_PORT,
      method: 'GET',
      path: '/_bench/records',
      timeoutMs: 60_000,
    })) as DeliveryRecord[];
    return { records, unparsable, cpuAtEnd };
  };

  const duplicateReports: string[] = [];
  /** Exactly one delivery per (approval, endpoint)? Returns the check and the first arrival per pair. */
  const checkDeliveries = (records: DeliveryRecord[], unparsable: number, approvalIds: string[], paths: string[], label: string) => {
    const approvals = new Set(approvalIds);
    const endpointPaths = new Set(paths);
    const perEvent = new Map<string, number[]>();
    const eventsPerPair = new Map<string, Set<string>>();
    const firstArrival = new Map<string, number>();
    let unexpected = 0;
    for (const [arrivedAt, hookPath, eventId, approvalId, type] of records) {
      if (!approvals.has(approvalId) || !endpointPaths.has(hookPath) || type !== EVENT) {
        unexpected++;
        continue;
      }
      const eventKey = `${hookPath}|${eventId}`;
      const arrivals = perEvent.get(eventKey) ?? [];
      arrivals.push(arrivedAt);
      perEvent.set(eventKey, arrivals);
      const pair = `${hookPath}|${approvalId}`;
      const events = eventsPerPair.get(pair) ?? new Set<string>();
      events.add(eventId);
      eventsPerPair.set(pair, events);
      if (!firstArrival.has(pair) || firstArrival.get(pair)! > arrivedAt) firstArrival.set(pair, arrivedAt);
    }
    const duplicated = [...perEvent].filter(([, arrivals]) => arrivals.length > 1);
    const check: DeliveryCheck = {
      expected: approvalIds.length * paths.length,
      delivered: firstArrival.size,
      missing: approvalIds.length * paths.length - firstArrival.size,
      duplicates: duplicated.reduce((sum, [, arrivals]) => sum + arrivals.length - 1, 0),
      doubleEvents: [...eventsPerPair.values()].filter((events) => events.size > 1).length,
      unexpected,
      unparsable,
    };
    for (const [key, arrivals] of duplicated.slice(0, 10)) {
      const [hookPath, eventId] = key.split('|');
      const times = arrivals.map((t) => new Date(t).toISOString().slice(11, 23)).join(', ');
      duplicateReports.push(`${label}: event ${eventId} at ${hookPath} arrived ${arrivals.length} times (at ${times})`);
    }
    if (check.missing || check.duplicates || check.doubleEvents || check.unexpected || check.unparsable) {
      log(`!!! ${label}: ${JSON.stringify(check)}`);
    }
    return { check, firstArrival };
  };

  /** `ats` (attempts started) of the newest completed delivery jobs, read from Redis. */
  const deliveryJobStarts = async (newest: number): Promise<JobStarts> => {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const base = `${REDIS_PREFIX}:${webhookDeliveryJob.queue}`;
      const ids = await redis.zrevrange(`${base}:completed`, 0, Math.min(newest, 1000) - 1);
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hget(`${base}:${id}`, 'ats');
      const starts = ((await pipeline.exec()) ?? []).map(([, value]) => Number(value ?? 0)).filter((n) => n > 0);
      return {
        sampled: starts.length,
        putBackPct: round((100 * starts.filter((n) => n > 1).length) / starts.length, 1),
        meanStarts: round(starts.reduce((a, b) => a + b, 0) / starts.length, 2),
        maxStarts: Math.max(...starts),
      };
    } finally {
      redis.disconnect();
    }
  };
  const formatStarts = (j: JobStarts) =>
    `${j.putBackPct}% of the newest ${j.sampled} jobs (starts per job: mean ${j.meanStarts}, max ${j.maxStarts})`;

  // --- 1. the BullMQ ceiling ----------------------------------------------------------------

  const measureCeiling = async (run: number): Promise<CeilingResult> => {
    let ready = false;
    let done: { done: number; firstStartedAt: number; completed: number } | undefined;
    const queueName = `ceiling-${run}`;
    const child = await startNodeProcess({
      label: 'ceiling worker',
      args: ['--import', 'tsx', 'bench/delivery-ceiling-worker.ts'],
      env: {
        REDIS_URL,
        CEILING_PREFIX,
        CEILING_QUEUE: queueName,
        CEILING_CONCURRENCY: String(DELIVERY_CONCURRENCY),
        CEILING_JOBS: String(CEILING_JOBS),
        CEILING_LOCK_DURATION_MS: String(WORKER_LOCK_DURATION_MS),
      },
      onStdoutLine: (line) => {
        const message = JSON.parse(line) as { ready?: boolean; done?: number; firstStartedAt: number; completed: number };
        if (message.ready) ready = true;
        if (message.done) done = message as typeof done;
      },
      isReady: () => ready,
    });
    const queue = new Queue(queueName, { connection: { host: HOST, port: 6379 }, prefix: CEILING_PREFIX, defaultJobOptions: retention });
    try {
      await queue.waitUntilReady();
      const cpuFrom = cpuSnapshot([child]);
      const startedAt = epochMs();
      // The options of a delivery job (src/queues/job-producers.ts), with a trivial processor.
      for (let from = 0; from < CEILING_JOBS; from += CEILING_CHUNK) {
        const chunk = Array.from({ length: Math.min(CEILING_CHUNK, CEILING_JOBS - from) }, () => {
          const deliveryId = randomUUID();
          return {
            name: 'deliver',
            data: { deliveryId, attempt: 1 },
            opts: { jobId: `${deliveryId}-1`, attempts: 5, backoff: { type: 'exponential', delay: 1000 } },
          };
        });
        await queue.addBulk(chunk);
      }
      const addedAt = epochMs();
      const giveUpAt = Date.now() + 300_000;
      while (!done) {
        if (child.exited()) throw new Error(`the ceiling worker exited:\n${child.stderrTail()}`);
        if (Date.now() > giveUpAt) throw new Error('the ceiling worker did not complete its jobs in 300 s');
        await sleep(20);
      }
      const cpuTo = cpuSnapshot([child]);
      const cpu = cpuUse(cpuFrom, cpuTo);
      const cpuMsPerJob = cpuMsPer(cpu, cpuTo.at - cpuFrom.at, CEILING_JOBS, ['bench', 'ceiling worker', 'redis']);
      const seconds = (done.done - startedAt) / 1000;
      const result = {
        jobs: CEILING_JOBS,
        seconds: round(seconds, 2),
        jobsPerS: round(CEILING_JOBS / seconds, 0),
        addSeconds: round((addedAt - startedAt) / 1000, 2),
        cpu,
        cpuMsPerJob,
      };
      log(
        `ceiling: ${CEILING_JOBS} jobs in ${result.seconds} s = ${result.jobsPerS} jobs/s (adds took ${result.addSeconds} s); ${formatCpu(cpu)}`,
      );
      return result;
    } finally {
      await queue.close();
      await child.stop();
      await deleteRedisKeys(CEILING_PREFIX);
    }
  };

  // --- 2. decision-to-delivery latency, one endpoint --------------------------------------

  /**
   * The stages of each delivery, from the rows: the outbox row (created at the start of the
   * decision's transaction), the delivery row (created when the relay fanned the event out) and
   * the first attempt (stamped by the worker just before it signs and sends).
   */
  const latencyStages = async (decided: DecisionBatch['ok'], firstArrival: Map<string, number>): Promise<Record<string, Stats>> => {
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    try {
      const rows = (
        await client.query<{ approval_id: string; committing_at: Date; fanned_out_at: Date; attempted_at: Date | null }>(
          `SELECT o.body->'data'->>'approvalId' AS approval_id, o.created_at AS committing_at,
                  d.created_at AS fanned_out_at, min(a.attempted_at) AS attempted_at
           FROM outbox_messages o
           JOIN webhook_deliveries d ON d.event_id = o.event_id
           LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
           WHERE o.org_id = $1 AND o.event_type = $2 AND o.body->'data'->>'approvalId' = ANY ($3::text[])
           GROUP BY 1, 2, 3`,
          [latencyOrg!.orgId, EVENT, decided.map((d) => d.approvalId)],
        )
      ).rows;
      const byApproval = new Map(rows.map((row) => [row.approval_id, row]));
      const stages: Record<string, number[]> = {
        'decision transaction start -> decision response': [],
        'decision response -> relay fan-out (delivery row)': [],
        'fan-out -> attempt starts (queue, load, slot)': [],
        'attempt starts -> arrival (sign, POST)': [],
      };
      const [toResponse, toFanOut, toAttempt, toArrival] = Object.values(stages) as [number[], number[], number[], number[]];
      for (const d of decided) {
        const row = byApproval.get(d.approvalId);
        const arrivedAt = firstArrival.get(`${LATENCY_PATH}|${d.approvalId}`);
        if (!row || !row.attempted_at || arrivedAt === undefined) continue;
        toResponse.push(d.doneAt - row.committing_at.getTime());
        toFanOut.push(row.fanned_out_at.getTime() - d.doneAt);
        toAttempt.push(row.attempted_at.getTime() - row.fanned_out_at.getTime());
        toArrival.push(arrivedAt - row.attempted_at.getTime());
      }
      return Object.fromEntries(Object.entries(stages).map(([name, values]) => [name, stats(values)]));
    } finally {
      await client.end();
    }
  };

  const measureLatency = async (
    load: string,
    ids: string[],
    pacing: { concurrency: number; ratePerS?: number },
  ): Promise<LatencyResult> => {
    await settle();
    await receiverReset();
    log(
      `latency, ${load}: deciding ${ids.length} (${pacing.ratePerS ? `paced at ${pacing.ratePerS}/s, ` : ''}${pacing.concurrency} concurrent)`,
    );
    const cpuFrom = cpuSnapshot(watched());
    const batch = await decideAll(latencyOrg!, ids, pacing);
    const { records, unparsable, cpuAtEnd } = await waitForDeliveries(batch.ok.length, `latency ${load}`);
    const cpu = cpuUse(cpuFrom, cpuAtEnd);
    const { check, firstArrival } = checkDeliveries(
      records,
      unparsable,
      batch.ok.map((d) => d.approvalId),
      [LATENCY_PATH],
      `latency ${load}`,
    );
    const sinceResponse: number[] = [];
    const sinceSent: number[] = [];
    for (const d of batch.ok) {
      const arrivedAt = firstArrival.get(`${LATENCY_PATH}|${d.approvalId}`);
      if (arrivedAt === undefined) continue;
      sinceResponse.push(arrivedAt - d.doneAt);
      sinceSent.push(arrivedAt - d.sentAt);
    }
    const inSendOrder = [...batch.ok]
      .sort((a, b) => a.sentAt - b.sentAt)
      .flatMap((d) => {
        const arrivedAt = firstArrival.get(`${LATENCY_PATH}|${d.approvalId}`);
        return arrivedAt === undefined ? [] : [arrivedAt - d.doneAt];
      });
    const byTenthMs = Array.from({ length: 10 }, (_, k) => {
      const part = inSendOrder.slice(Math.floor((k * inSendOrder.length) / 10), Math.floor(((k + 1) * inSendOrder.length) / 10));
      return { p50: round(percentile(part, 50), 0), p99: round(percentile(part, 99), 0) };
    });
    const stagesMs = await latencyStages(batch.ok, firstArrival);
    const jobStarts = await deliveryJobStarts(check.delivered);
    const result: LatencyResult = {
      load,
      decisions: batch.ok.length,
      failedDecisions: batch.failed.length,
      decisionsPerS: round(ids.length / ((batch.endedAt - batch.startedAt) / 1000), 0),
      decisionResponseMs: stats(batch.ok.map((d) => d.doneAt - d.sentAt)),
      check,
      sinceResponseMs: stats(sinceResponse),
      sinceSentMs: stats(sinceSent),
      beforeResponse: sinceResponse.filter((ms) => ms < 0).length,
      byTenthMs,
      stagesMs,
      jobStarts,
      cpu,
    };
    log(
      `latency, ${load}: delivery after decision response p50 ${result.sinceResponseMs.p50} ms, p99 ${result.sinceResponseMs.p99} ms, max ${result.sinceResponseMs.max} ms; ${formatCpu(cpu)}`,
    );
    return result;
  };

  // --- 3. delivery throughput to 1, 10, 100 endpoints ----------------------------------------

  const measureThroughput = async (endpoints: number, decisions: number, ceilingPerS: number, label = `throughput ${endpoints}`) => {
    const org = throughputOrgs.get(endpoints)!;
    const paths = throughputPaths.get(endpoints)!;
    const ids = await createPending(org, decisions);
    await settle();
    await receiverReset();
    log(
      `${label}: deciding ${decisions} as fast as possible (${HIGH_CONCURRENCY} concurrent), ${decisions * endpoints} deliveries expected`,
    );
    const cpuFrom = cpuSnapshot(watched());
    const batch = await decideAll(org, ids, { concurrency: HIGH_CONCURRENCY });
    const { records, unparsable, cpuAtEnd } = await waitForDeliveries(batch.ok.length * endpoints, label);
    const cpu = cpuUse(cpuFrom, cpuAtEnd);
    const { check, firstArrival } = checkDeliveries(
      records,
      unparsable,
      batch.ok.map((d) => d.approvalId),
      paths,
      label,
    );
    let first = Infinity;
    let last = -Infinity;
    for (const at of firstArrival.values()) {
      if (at < first) first = at;
      if (at > last) last = at;
    }
    const sortedArrivals = [...firstArrival.values()].sort((a, b) => a - b);
    let longestGapMs = 0;
    for (let i = 1; i < sortedArrivals.length; i++) longestGapMs = Math.max(longestGapMs, sortedArrivals[i]! - sortedArrivals[i - 1]!);
    const jobStarts = await deliveryJobStarts(check.delivered);
    const arrivalSeconds = (last - first) / 1000;
    const deliveriesPerS = check.delivered / arrivalSeconds;
    const result: ThroughputResult = {
      endpoints,
      decisions: batch.ok.length,
      failedDecisions: batch.failed.length,
      decideSeconds: round((batch.endedAt - batch.startedAt) / 1000, 2),
      check,
      arrivalSeconds: round(arrivalSeconds, 2),
      deliveriesPerS: round(deliveriesPerS, 0),
      endToEndPerS: round(check.delivered / ((last - batch.startedAt) / 1000), 0),
      ratioToCeiling: round(deliveriesPerS / ceilingPerS, 3),
      longestGapMs: round(longestGapMs, 0),
      jobStarts,
      cpu,
      cpuMsPerDelivery: cpuMsPer(cpu, cpuAtEnd.at - cpuFrom.at, check.delivered, ['worker', 'web', 'postgres', 'redis']),
    };
    log(
      `${label}: ${check.delivered} deliveries in ${result.arrivalSeconds} s = ${result.deliveriesPerS}/s (${round(result.ratioToCeiling * 100, 1)}% of the ceiling); ${formatCpu(cpu)}`,
    );
    return result;
  };

  // --- 4. expiry lateness ------------------------------------------------------------------

  const measureExpiry = async (): Promise<ExpiryResult> => {
    await settle();
    const org = expiryOrg!;
    const createAgent = new http.Agent({ keepAlive: true, maxSockets: 20 });
    const waitAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
    const created: { id: string; expiresAt: number }[] = [];
    const answers: { answeredAt?: number; error?: string }[] = [];
    const waiters: Promise<void>[] = [];
    const waitFor = async (i: number) => {
      const { id } = created[i]!;
      for (let poll = 1; poll <= 3; poll++) {
        try {
          const response = await requestJson({
            port: API_PORT,
            method: 'GET',
            path: `/v1/approvals/${id}?wait=30`,
            key: org.key,
            agent: waitAgent,
            timeoutMs: 45_000,
          });
          if (response.status !== 200) {
            answers[i] = { error: `HTTP ${response.status}` };
            return;
          }
          if (response.body.status !== 'pending') {
            answers[i] = { answeredAt: epochMs() };
            return;
          }
        } catch (error) {
          answers[i] = { error: String(error) };
          return;
        }
      }
      answers[i] = { error: 'still pending after 3 waits' };
    };
    const rate = EXPIRY_APPROVALS / EXPIRY_SPREAD_S;
    log(
      `expiry: creating ${EXPIRY_APPROVALS} approvals over ${EXPIRY_SPREAD_S} s (timeoutSeconds ${EXPIRY_TIMEOUT_S}), one long-poll each`,
    );
    const cpuFrom = cpuSnapshot(watched());
    await runPaced(EXPIRY_APPROVALS, { concurrency: 20, ratePerS: rate }, async (i) => {
      const body = await expectJson(201, {
        port: API_PORT,
        method: 'POST',
        path: '/v1/approvals',
        key: org.key,
        body: { ...APPROVAL_BODY, policyKey: EXPIRY_POLICY },
        agent: createAgent,
      });
      created[i] = { id: body.id as string, expiresAt: Date.parse(body.expiresAt as string) };
      waiters.push(waitFor(i));
    });
    createAgent.destroy();
    const expiries = created.map((c) => c.expiresAt);
    const windowS = (Math.max(...expiries) - Math.min(...expiries)) / 1000;
    log(
      `expiry: created; deadlines fall within ${round(windowS, 2)} s, the last in ${round((Math.max(...expiries) - Date.now()) / 1000, 1)} s`,
    );
    const timedOut = Symbol('timed out');
    const outcome = await Promise.race([Promise.all(waiters), sleep((EXPIRY_TIMEOUT_S + 90) * 1000, timedOut)]);
    if (outcome === timedOut) log('!!! expiry: long-polls still open 90 s after the deadlines; reading the database anyway');
    const cpu = cpuUse(cpuFrom, cpuSnapshot(watched()));
    waitAgent.destroy();

    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    try {
      const rows = (
        await client.query<{ id: string; status: string; decided_at: Date | null }>(
          'SELECT id, status, decided_at FROM approvals WHERE id = ANY($1::uuid[])',
          [created.map((c) => c.id)],
        )
      ).rows;
      const actors = (
        await client.query<{ id: string; actor: string }>(
          `SELECT data::jsonb->>'approvalId' AS id, actor FROM audit_events WHERE org_id = $1 AND type = 'approval.expired'`,
          [org.orgId],
        )
      ).rows;
      const settledBy: Record<string, number> = {};
      for (const { actor } of actors) {
        const by = (JSON.parse(actor) as { id?: string }).id ?? actor;
        settledBy[by] = (settledBy[by] ?? 0) + 1;
      }
      // The settlement clears expires_at, so the deadline is the one the creation answered with.
      const deadlineOf = new Map(created.map((c) => [c.id, c.expiresAt]));
      const expired = rows.filter((r) => r.status === 'expired' && r.decided_at);
      const lateness = expired.map((r) => r.decided_at!.getTime() - deadlineOf.get(r.id)!);
      const longPollLateness = created.flatMap((c, i) => {
        const answeredAt = answers[i]?.answeredAt;
        return answeredAt === undefined ? [] : [answeredAt - c.expiresAt];
      });
      const result: ExpiryResult = {
        approvals: EXPIRY_APPROVALS,
        expiresWindowS: round(windowS, 2),
        expired: expired.length,
        notExpired: EXPIRY_APPROVALS - expired.length,
        latenessMs: stats(lateness),
        longPollLatenessMs: stats(longPollLateness),
        earlyCount: lateness.filter((ms) => ms < 0).length,
        waiterErrors: answers.filter((a) => a?.error).length,
        settledBy,
        cpu,
      };
      log(
        `expiry: ${expired.length} expired; lateness p50 ${result.latenessMs.p50} ms, p99 ${result.latenessMs.p99} ms, max ${result.latenessMs.max} ms; settled by ${JSON.stringify(settledBy)}`,
      );
      return result;
    } finally {
      await client.end();
    }
  };

  // --- the runs --------------------------------------------------------------------------

  const runs: RunResult[] = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`--- run ${run}/${RUNS}`);
    const ceiling = await measureCeiling(run);

    const latencyIds = await createPending(latencyOrg!, 2 * LATENCY_DECISIONS);
    const low = await measureLatency('low', latencyIds.slice(0, LATENCY_DECISIONS), {
      concurrency: LOW_CONCURRENCY,
      ratePerS: LOW_RATE,
    });
    const high = await measureLatency('high', latencyIds.slice(LATENCY_DECISIONS), { concurrency: HIGH_CONCURRENCY });

    const throughput: ThroughputResult[] = [];
    for (const { endpoints, decisions } of THROUGHPUT) {
      throughput.push(await measureThroughput(endpoints, decisions, ceiling.jobsPerS));
    }
    const expiry = await measureExpiry();
    runs.push({ ceiling, latency: [low, high], throughput, expiry });
  }

  // --- 5. where the worker's time goes -------------------------------------------------------

  let profile: (ProfileSummary & { deliveriesPerS: number; workerCpu: number; file: string }) | undefined;
  if (PROFILE) {
    log(`--- profile: the ${PROFILE_ENDPOINTS}-endpoint batch again, worker under --cpu-prof`);
    await settle();
    await worker.stop();
    const profileDir = path.join(tmp, 'profile');
    worker = await startWorker('worker-profiled', ['--cpu-prof', '--cpu-prof-dir', profileDir]);
    const profiled = await measureThroughput(PROFILE_ENDPOINTS, PROFILE_DECISIONS, runs[0]!.ceiling.jobsPerS, 'profiled');
    await worker.stop();
    const files = existsSync(profileDir) ? readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')) : [];
    if (files.length === 0) notes.push('the profiled worker wrote no .cpuprofile');
    else {
      const file = path.join(profileDir, files[0]!);
      profile = { ...summarizeCpuProfile(file), deliveriesPerS: profiled.deliveriesPerS, workerCpu: profiled.cpu.worker ?? NaN, file };
    }
  }

  // --- report --------------------------------------------------------------------------------

  const result = aggregate(runs);
  const ceilingPerS = result.ceiling.jobsPerS;
  const low = result.latency[0]!;
  const high = result.latency[1]!;
  const lowMet = low.sinceResponseMs.p99 < TARGET_LOW_P99_MS && low.check.missing === 0;
  const expiryMet = result.expiry.latenessMs.p99 < TARGET_EXPIRY_P99_MS && result.expiry.notExpired === 0;
  const throughputMet = result.throughput.map((t) => t.ratioToCeiling >= TARGET_THROUGHPUT_RATIO);
  const verdict = (met: boolean) => (met ? 'MET' : 'MISSED');

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

  console.log(
    `1. Ceiling: bare BullMQ, ${CEILING_JOBS} trivial jobs (addBulk by ${CEILING_CHUNK}), worker concurrency ${DELIVERY_CONCURRENCY}\n`,
  );
  console.log(
    formatTable(
      ['jobs', 'first add to last completion (s)', 'jobs/s', 'adds done after (s)', 'CPU'],
      [[result.ceiling.jobs, result.ceiling.seconds, result.ceiling.jobsPerS, result.ceiling.addSeconds, formatCpu(result.ceiling.cpu)]],
    ),
  );
  console.log(`   CPU ms per job: ${formatPer(result.ceiling.cpuMsPerJob)}`);

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
      result.latency.map((l) => [
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
  for (const l of result.latency) {
    console.log(`   ${l.load}: CPU ${formatCpu(l.cpu)}; delivery jobs put back (endpoint busy): ${formatStarts(l.jobStarts)}`);
    console.log(`      p50 / p99 by tenth of the step, in send order (ms): ${l.byTenthMs.map((t) => `${t.p50}/${t.p99}`).join('  ')}`);
  }
  console.log(`\n   Where the time goes (ms, from the outbox, delivery and attempt rows; database and worker clocks are this machine's)\n`);
  console.log(
    formatTable(
      ['load', 'stage', 'p50', 'p99', 'max'],
      result.latency.flatMap((l) => Object.entries(l.stagesMs).map(([stage, st]) => [l.load, stage, st.p50, st.p99, st.max])),
    ),
  );

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
      result.throughput.map((t, i) => [
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
        verdict(throughputMet[i]!),
      ]),
    ),
  );
  for (const t of result.throughput) {
    console.log(
      `   ${t.endpoints} endpoint(s): CPU ${formatCpu(t.cpu)}; delivery jobs put back (endpoint busy): ${formatStarts(t.jobStarts)}`,
    );
    console.log(`      CPU ms per delivery: ${formatPer(t.cpuMsPerDelivery)}`);
  }

  const e = result.expiry;
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

  if (profile) {
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

  // Worker warnings and errors: the relay and delivery failures show up here.
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
  if (duplicateReports.length > 0)
    console.log(`\nDuplicate deliveries (same event id at the same endpoint):\n   ${duplicateReports.join('\n   ')}`);
  else console.log('No duplicate deliveries.');
  for (const note of notes) console.log(`!!! ${note}`);

  const problems = [...result.latency.map((l) => l.check), ...result.throughput.map((t) => t.check)];
  const allDelivered = problems.every((c) => c.missing === 0 && c.doubleEvents === 0 && c.unexpected === 0 && c.unparsable === 0);
  const duplicates = problems.reduce((sum, c) => sum + c.duplicates, 0);
  console.log(`\nTargets:`);
  result.throughput.forEach((t, i) =>
    console.log(
      `  ${verdict(throughputMet[i]!)}: delivery throughput to ${t.endpoints} endpoint(s) ${t.deliveriesPerS}/s = ${round(t.ratioToCeiling * 100, 1)}% of the bare BullMQ ceiling (${ceilingPerS} jobs/s); target >= ${TARGET_THROUGHPUT_RATIO * 100}%`,
    ),
  );
  console.log(`  ${verdict(lowMet)}: decision-to-delivery p99 at low load ${low.sinceResponseMs.p99} ms; target < ${TARGET_LOW_P99_MS} ms`);
  console.log(`  (no target) decision-to-delivery at high load: p50 ${high.sinceResponseMs.p50} ms, p99 ${high.sinceResponseMs.p99} ms`);
  console.log(
    `  ${verdict(expiryMet)}: expiry lateness p99 ${e.latenessMs.p99} ms (decided_at - expires_at); target < ${TARGET_EXPIRY_P99_MS} ms`,
  );
  console.log(`  ${verdict(allDelivered)}: every decided approval delivered to every endpoint (none missing, no second event)`);
  console.log(`  ${verdict(allDelivered && duplicates === 0)}: ... and exactly once: ${duplicates} duplicate deliveries (same event id)`);

  // Where the time goes, in one line per step, from the figures above.
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

  console.log(
    JSON.stringify({
      benchmark: 'delivery',
      at: new Date().toISOString(),
      mode,
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
        throughputAtLeast30PctOfCeiling: Object.fromEntries(result.throughput.map((t, i) => [t.endpoints, throughputMet[i]])),
        lowLoadP99Under250Ms: lowMet,
        expiryP99Under250Ms: expiryMet,
        allDelivered,
        allDeliveredExactlyOnce: allDelivered && duplicates === 0,
      },
      notes,
    }),
  );
});
