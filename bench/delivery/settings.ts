// What bench/delivery.ts measures and against what: sizes and switches from the environment (see
// its header), the ports and names it uses, and the targets.
import { envFlag, envInt, envNumber } from '../lib/run.js';

export const RUNS = envInt('BENCH_RUNS', 1);
export const COMPILED = envFlag('BENCH_COMPILED', true);
export const BUILD = envFlag('BENCH_BUILD', true);
export const PROFILE = envFlag('BENCH_PROFILE', true);
/** Passed to the worker, and the ceiling worker's concurrency. */
export const DELIVERY_CONCURRENCY = envInt('WEBHOOK_DELIVERY_CONCURRENCY', 50);
/** Not set by the bench: the product default (10) unless the environment says otherwise. */
export const ENDPOINT_CONCURRENCY = process.env.WEBHOOK_ENDPOINT_CONCURRENCY || '10 (default)';
export const WORKER_LOCK_DURATION_MS = envInt('WORKER_LOCK_DURATION_MS', 30_000);
export const CEILING_JOBS = envInt('BENCH_CEILING_JOBS', 20_000);
export const CEILING_CHUNK = envInt('BENCH_CEILING_CHUNK', 1_000);
export const LATENCY_DECISIONS = envInt('BENCH_LATENCY_DECISIONS', 10_000);
export const LOW_RATE = envNumber('BENCH_LOW_RATE', 200);
export const LOW_CONCURRENCY = envInt('BENCH_LOW_CONCURRENCY', 10);
export const HIGH_CONCURRENCY = envInt('BENCH_HIGH_CONCURRENCY', 50);
/**
 * The throughput cases, each with its target share of the bare BullMQ ceiling. To one endpoint
 * deliveries go as fast as decisions are made, so that case has none.
 */
export const THROUGHPUT: { endpoints: number; decisions: number; targetRatio: number | null }[] = [
  { endpoints: 1, decisions: envInt('BENCH_TP1_DECISIONS', 2_000), targetRatio: null },
  { endpoints: 10, decisions: envInt('BENCH_TP10_DECISIONS', 2_000), targetRatio: 0.2 },
  { endpoints: 100, decisions: envInt('BENCH_TP100_DECISIONS', 300), targetRatio: 0.3 },
];
export const EXPIRY_APPROVALS = envInt('BENCH_EXPIRY_APPROVALS', 1_000);
export const EXPIRY_TIMEOUT_S = envInt('BENCH_EXPIRY_TIMEOUT_S', 5);
export const EXPIRY_SPREAD_S = envNumber('BENCH_EXPIRY_SPREAD_S', 5);
export const PROFILE_DECISIONS = envInt('BENCH_PROFILE_DECISIONS', 1_000);
export const PROFILE_ENDPOINTS = 10;
/** A delivery wait gives up after this long without a new delivery. */
export const STALL_S = envNumber('BENCH_STALL_S', 30);
export const CREATE_CONCURRENCY = 50;
/** After the last expected delivery, how long late duplicates may still arrive before the records are read. */
export const DUPLICATE_GRACE_MS = 1_500;

export const DATABASE = 'approval_gate_bench_delivery';
export const REDIS_PREFIX = 'agbench-delivery';
export const CEILING_PREFIX = 'agbench-delivery-ceiling';
export const API_PORT = 3904;
export const RECEIVER_PORT = 3905;
export const EVENT = 'approval.approved';
export const LATENCY_PATH = '/hook/latency';

export const TARGET_LOW_P99_MS = 100;
export const TARGET_EXPIRY_P99_MS = 100;

export const REVIEW_POLICY = 'bench-review';
export const EXPIRY_POLICY = 'bench-expiry';
export const APPROVAL_BODY = { action: 'refund', payload: { amount: 5000, currency: 'EUR' }, agent: 'bench-agent' };
