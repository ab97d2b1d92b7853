import type { EventConsumer } from '../consumers/consumer.js';
import { CONSUMERS } from '../consumers/registry.js';
import { approvalExpiryJob } from './approval-expiry.js';
import { auditExportJob } from './audit-export.js';
import type { JobDefinition } from './job.js';
import { maintenanceJob } from './maintenance.js';

/**
 * Every queue: the standalone jobs and each consumer's. Producers, the roles of WORKER_QUEUES,
 * worker concurrency and Bull Board's list all come from here.
 */
export function jobsFor(consumers: readonly EventConsumer<any>[]): JobDefinition<any>[] {
  return [approvalExpiryJob, maintenanceJob, auditExportJob, ...consumers.flatMap((consumer) => (consumer.job ? [consumer.job] : []))];
}

export const JOBS = jobsFor(CONSUMERS);
