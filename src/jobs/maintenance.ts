import { z } from 'zod';
import type { Config } from '../config.js';
import { defineJob } from './job.js';

/**
 * Ended sessions, expired invites and links, old sign-in failures are only clutter, and an expired
 * export answers 410 from its deadline on whether or not its storage is freed yet: an hourly prune is plenty.
 */
const PRUNE_INTERVAL_MS = 3_600_000;

/** Every periodic task, with how often it runs. */
const INTERVALS = {
  'sweep-expired-approvals': (config: Config) => config.EXPIRY_SWEEP_INTERVAL_MS,
  'sweep-stalled-deliveries': (config: Config) => config.DELIVERY_SWEEP_INTERVAL_MS,
  'sweep-consumer-tasks': (config: Config) => config.CONSUMER_SWEEP_INTERVAL_MS,
  'prune-sign-in-records': () => PRUNE_INTERVAL_MS,
  'prune-decision-links': () => PRUNE_INTERVAL_MS,
  'checkpoint-grown-chains': (config: Config) => config.AUDIT_CHECKPOINT_SECONDS * 1000,
  'expire-audit-exports': () => PRUNE_INTERVAL_MS,
} satisfies Record<string, (config: Config) => number>;

export type MaintenanceTask = keyof typeof INTERVALS;
const TASKS = Object.keys(INTERVALS) as [MaintenanceTask, ...MaintenanceTask[]];

/**
 * The periodic safety nets: state lives in Postgres, so whatever Redis lost is found again here.
 * Every worker with this role declares the same schedules (upserting is idempotent), and declares
 * them again after Redis comes back empty.
 */
export const maintenanceJob = defineJob<{ task: MaintenanceTask }>({
  queue: 'maintenance',
  payload: z.object({ task: z.enum(TASKS) }),
  options: { attempts: 1, backoff: { type: 'fixed', delay: 0 }, concurrency: () => 1 },
  schedules: (config) => TASKS.map((task) => ({ id: task, payload: { task }, everyMs: INTERVALS[task](config) })),
});
