import { approvalExpiryJob } from './approval-expiry.js';
import { approvalReminderJob } from './approval-reminder.js';
import { auditExportJob } from './audit-export.js';
import type { JobDefinition } from './job.js';
import { maintenanceJob } from './maintenance.js';
import { slackEphemeralJob } from './slack-ephemeral.js';

/**
 * The queues that no consumer owns. Each consumer's queue is declared with it (src/consumers/);
 * the composition root puts the two together into the list of every queue (JOBS).
 */
export const STANDALONE_JOBS: readonly JobDefinition<any>[] = [
  approvalExpiryJob,
  approvalReminderJob,
  maintenanceJob,
  auditExportJob,
  slackEphemeralJob,
];
