import type { Job } from 'bullmq';
import type { ApprovalService } from '../src/modules/approvals/approval-service.js';
import type { DeliveryService } from '../src/modules/webhooks/delivery-service.js';
import type { Actor } from '../src/modules/audit/audit-events.js';
import { maintenanceJob } from '../src/queues/job-definitions.js';

const sweeper: Actor = { type: 'system', id: 'expiry-sweeper' };

/** How late an approval must be before the sweeper takes it from its expiry job. */
const EXPIRY_GRACE_MS = 1_000;
const SWEEP_BATCH = 500;

export interface MaintenanceTasks {
  approvals: ApprovalService;
  deliveries: DeliveryService;
}

/** The periodic safety nets: state lives in Postgres, so whatever Redis lost is found again here. */
export function createMaintenanceProcessor({ approvals, deliveries }: MaintenanceTasks) {
  return async (job: Job) => {
    const { task } = maintenanceJob.payload.parse(job.data);
    switch (task) {
      case 'sweep-expired-approvals':
        return { settled: await approvals.timeOutOverdue(EXPIRY_GRACE_MS, SWEEP_BATCH, sweeper) };
      case 'sweep-stalled-deliveries':
        return { resumed: await deliveries.resumeStalled() };
    }
  };
}
