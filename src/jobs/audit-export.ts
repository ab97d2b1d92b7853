import { z } from 'zod';
import { defineJob, isLastAttempt } from './job.js';

/** Writes a bulk audit export; the export is marked failed once its last attempt fails. */
export const auditExportJob = defineJob<{ orgId: string; exportId: string }>({
  queue: 'audit-export',
  payload: z.object({ orgId: z.uuid(), exportId: z.uuid() }),
  // Each export holds a connection and streams for a while; few at a time keep the database responsive.
  options: { attempts: 3, backoff: { type: 'exponential', delay: 5000 }, concurrency: (config) => config.AUDIT_EXPORT_CONCURRENCY },
  jobId: ({ exportId }) => `audit-export-${exportId}`,
  processor:
    ({ audit }) =>
    async ({ orgId, exportId }, job) => {
      try {
        return await audit.runExport(orgId, exportId);
      } catch (error) {
        if (isLastAttempt(job)) await audit.failExport(orgId, exportId);
        throw error;
      }
    },
});
