import { z } from 'zod';
import { defineJob } from './job.js';

/**
 * Settles a pending approval whose deadline has passed: expired, or escalated with its successor.
 * The deadline watchers (workers/deadline-watcher.ts) enqueue it when the deadline passes, as
 * `expire-<id>`, so that handing it over twice makes one job; the sweep of the maintenance queue
 * covers jobs Redis lost.
 */
export const approvalExpiryJob = defineJob<{ orgId: string; approvalId: string }>({
  queue: 'approval-expiry',
  payload: z.object({ orgId: z.uuid(), approvalId: z.uuid() }),
  options: { attempts: 5, backoff: { type: 'exponential', delay: 1000 }, concurrency: (config) => config.EXPIRY_CONCURRENCY },
  jobId: ({ approvalId }) => `expire-${approvalId}`,
});
