import type { Job } from 'bullmq';
import type { AuditService } from '../src/modules/audit/audit-service.js';
import { auditExportJob } from '../src/queues/job-definitions.js';

/** Writes a bulk audit export; the export is marked failed once its last attempt fails. */
export function createAuditExportProcessor(audit: AuditService) {
  return async (job: Job) => {
    const { orgId, exportId } = auditExportJob.payload.parse(job.data);
    try {
      return await audit.runExport(orgId, exportId);
    } catch (error) {
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) await audit.failExport(orgId, exportId);
      throw error;
    }
  };
}
