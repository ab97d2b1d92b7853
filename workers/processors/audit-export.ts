import type { auditExportJob } from '../../src/jobs/audit-export.js';
import type { JobHandler, PayloadOf } from '../../src/jobs/job.js';
import { deferOrRethrow, isLastAttempt, RetryLater } from '../../src/lib/job-retries.js';
import type { Services } from '../../src/services.js';

/** Writes an export, gives the job back when the worker stops, and marks the export failed after its last attempt. */
export function writeAuditExport({ audit }: Pick<Services, 'audit'>): JobHandler<PayloadOf<typeof auditExportJob>> {
  return async ({ orgId, exportId }, job, token, signal) => {
    try {
      return await audit.runExport(orgId, exportId, signal);
    } catch (error) {
      if (error instanceof RetryLater) return deferOrRethrow(error, job, token);
      if (isLastAttempt(job)) await audit.failExport(orgId, exportId);
      throw error;
    }
  };
}
