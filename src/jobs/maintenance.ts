import { z } from 'zod';
import { resumeStalledTasks } from '../consumers/stalled-tasks.js';
import type { Actor } from '../modules/audit/audit-events.js';
import { defineJob } from './job.js';

const sweeper: Actor = { type: 'system', id: 'expiry-sweeper' };

/** How late an approval must be before the sweeper settles it itself: its handover to the expiry queue went missing. */
const EXPIRY_GRACE_MS = 1_000;
const SWEEP_BATCH = 500;

const TASKS = [
  'sweep-expired-approvals',
  'sweep-stalled-deliveries',
  'sweep-consumer-tasks',
  'prune-sign-in-records',
  'prune-decision-links',
  'checkpoint-grown-chains',
  'expire-audit-exports',
] as const;

/**
 * Ended sessions, expired invites and links, old sign-in failures are only clutter, and an expired
 * export answers 410 from its deadline on whether or not its storage is freed yet: an hourly prune is plenty.
 */
const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * The periodic safety nets: state lives in Postgres, so whatever Redis lost is found again here.
 * Every worker with this role declares the same schedules (upserting is idempotent), and declares
 * them again after Redis comes back empty.
 */
export const maintenanceJob = defineJob<{ task: (typeof TASKS)[number] }>({
  queue: 'maintenance',
  payload: z.object({ task: z.enum(TASKS) }),
  options: { attempts: 1, backoff: { type: 'fixed', delay: 0 }, concurrency: () => 1 },
  schedules: (config) =>
    (
      [
        ['sweep-expired-approvals', config.EXPIRY_SWEEP_INTERVAL_MS],
        ['sweep-stalled-deliveries', config.DELIVERY_SWEEP_INTERVAL_MS],
        ['sweep-consumer-tasks', config.CONSUMER_SWEEP_INTERVAL_MS],
        ['prune-sign-in-records', PRUNE_INTERVAL_MS],
        ['prune-decision-links', PRUNE_INTERVAL_MS],
        ['checkpoint-grown-chains', config.AUDIT_CHECKPOINT_SECONDS * 1000],
        ['expire-audit-exports', PRUNE_INTERVAL_MS],
      ] as const
    ).map(([task, everyMs]) => ({ id: task, payload: { task }, everyMs })),
  processor:
    (services) =>
    async ({ task }) => {
      switch (task) {
        case 'sweep-expired-approvals':
          return { settled: await services.approvals.timeOutOverdue(EXPIRY_GRACE_MS, SWEEP_BATCH, sweeper) };
        case 'sweep-stalled-deliveries':
          return { resumed: await services.deliveries.resumeStalled() };
        case 'sweep-consumer-tasks':
          return resumeStalledTasks(services, SWEEP_BATCH);
        case 'prune-sign-in-records':
          return { pruned: await services.members.prune() };
        case 'prune-decision-links':
          return { pruned: await services.decisionLinks.prune() };
        case 'checkpoint-grown-chains':
          return { signed: await services.checkpoints.checkpointGrownChains(SWEEP_BATCH) };
        case 'expire-audit-exports':
          return { expired: await services.audit.expireExports(SWEEP_BATCH) };
      }
    },
});
