import { z } from 'zod';
import { defineJob } from './job.js';

/**
 * Writes a bulk audit export; the export is marked failed once its last attempt fails. A worker
 * that stops lets the export save its place and hands the job back at once, without counting an
 * attempt; a worker killed outright loses its job's lock, and the next run goes on from the same place.
 */
export const auditExportJob = defineJob<{ orgId: string; exportId: string }>({
  queue: 'audit-export',
  payload: z.object({ orgId: z.uuid(), exportId: z.uuid() }),
  // Each export holds a connection and streams for a while; few at a time keep the database responsive.
  options: { attempts: 3, backoff: { type: 'exponential', delay: 5000 }, concurrency: (config) => config.AUDIT_EXPORT_CONCURRENCY },
  jobId: ({ exportId }) => `audit-export-${exportId}`,
});
