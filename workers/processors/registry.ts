import type { EventConsumer } from '../../src/consumers/consumer.js';
import { approvalExpiryJob } from '../../src/jobs/approval-expiry.js';
import { approvalReminderJob } from '../../src/jobs/approval-reminder.js';
import { auditExportJob } from '../../src/jobs/audit-export.js';
import type { JobDefinition, JobHandler } from '../../src/jobs/job.js';
import { maintenanceJob } from '../../src/jobs/maintenance.js';
import { slackEphemeralJob } from '../../src/jobs/slack-ephemeral.js';
import type { Services } from '../../src/services.js';
import { expireApproval } from './approval-expiry.js';
import { sendApprovalReminder } from './approval-reminder.js';
import { writeAuditExport } from './audit-export.js';
import { runMaintenance } from './maintenance.js';
import { sendSlackEphemeral } from './slack-ephemeral.js';

/** Builds a queue's handler, once per worker process, from the services it uses. */
type Processor<Payload> = (services: Services) => JobHandler<Payload>;

const runs = <Payload>(job: JobDefinition<Payload>, processor: Processor<Payload>): [string, Processor<any>] => [job.queue, processor];

/**
 * What runs each queue, by its name: the standalone jobs' processors beside this file, and each
 * consumer's own (src/consumers/). Only the worker runtime reads it; producers know the
 * declarations alone.
 */
export function processorsFor(consumers: readonly EventConsumer<any>[]): ReadonlyMap<string, Processor<any>> {
  return new Map([
    runs(approvalExpiryJob, expireApproval),
    runs(approvalReminderJob, sendApprovalReminder),
    runs(maintenanceJob, runMaintenance),
    runs(auditExportJob, writeAuditExport),
    runs(slackEphemeralJob, sendSlackEphemeral),
    ...consumers.flatMap((consumer) => (consumer.job ? [runs(consumer.job, consumer.processor)] : [])),
  ]);
}
