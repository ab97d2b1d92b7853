// The figures of one run of bench/delivery.ts, step by step, and how runs are summed up.
import { percentile, round, type Stats } from '../lib/figures.js';

export interface CpuUse {
  /** Percent of one core, per process or process group; `machine` is percent of all cores together. */
  [name: string]: number;
}

export interface CeilingResult {
  jobs: number;
  seconds: number;
  jobsPerS: number;
  addSeconds: number;
  cpu: CpuUse;
  /** CPU ms per job of the producer (this process), the ceiling worker and Redis. */
  cpuMsPerJob: Record<string, number>;
}

export interface DeliveryCheck {
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
export interface JobStarts {
  /** The newest completed delivery jobs (BullMQ keeps 1,000). */
  sampled: number;
  putBackPct: number;
  meanStarts: number;
  maxStarts: number;
}

export interface LatencyResult {
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

export interface ThroughputResult {
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

export interface ExpiryResult {
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

export interface RunResult {
  ceiling: CeilingResult;
  latency: LatencyResult[];
  throughput: ThroughputResult[];
  expiry: ExpiryResult;
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

export function aggregate<T>(runs: T[]): T {
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
