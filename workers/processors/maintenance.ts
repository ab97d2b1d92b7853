import type { JobHandler, PayloadOf } from '../../src/jobs/job.js';
import type { maintenanceJob, MaintenanceTask } from '../../src/jobs/maintenance.js';
import { resumeStalledTasks } from '../../src/consumers/stalled-tasks.js';
import type { Actor } from '../../src/modules/audit/audit-events.js';
import type { Services } from '../../src/services.js';

const sweeper: Actor = { type: 'system', id: 'expiry-sweeper' };

/** How late an approval must be before the sweeper settles it itself: its handover to the expiry queue went missing. */
const EXPIRY_GRACE_MS = 1_000;
const SWEEP_BATCH = 500;

/** What each periodic task does, and what it reports to Bull Board. */
const TASKS: Record<MaintenanceTask, (services: Services) => Promise<unknown>> = {
  'sweep-expired-approvals': async ({ approvals }) => ({ settled: await approvals.timeOutOverdue(EXPIRY_GRACE_MS, SWEEP_BATCH, sweeper) }),
  'sweep-stalled-deliveries': async ({ deliveries }) => ({ resumed: await deliveries.resumeStalled() }),
  'sweep-consumer-tasks': (services) => resumeStalledTasks(services, SWEEP_BATCH),
  'prune-sign-in-records': async ({ members }) => ({ pruned: await members.prune() }),
  'prune-decision-links': async ({ decisionLinks }) => ({ pruned: await decisionLinks.prune() }),
  'checkpoint-grown-chains': async ({ checkpoints }) => ({ signed: await checkpoints.checkpointGrownChains(SWEEP_BATCH) }),
  'expire-audit-exports': async ({ audit }) => ({ expired: await audit.expireExports(SWEEP_BATCH) }),
};

/** Runs one of the periodic safety nets. */
export function runMaintenance(services: Services): JobHandler<PayloadOf<typeof maintenanceJob>> {
  return ({ task }) => TASKS[task](services);
}
