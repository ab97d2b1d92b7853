import { z } from 'zod';
import { defineJob } from './job.js';

/**
 * Sends one reminder point of a pending approval to the reviewers who have not voted
 * (docs/members-and-channels.md#reminders). The reminder watchers (workers/reminder-watcher.ts)
 * enqueue it when the point falls due, as `remind-<id>-<revision>-<point>`, so that several
 * watchers handing it over make one job; the processor re-reads the schedule and claims each
 * notice, so a repeated job sends nothing twice.
 */
export const approvalReminderJob = defineJob<{ orgId: string; approvalId: string; revision: number; point: number }>({
  queue: 'approval-reminders',
  payload: z.object({ orgId: z.uuid(), approvalId: z.uuid(), revision: z.number().int().min(1), point: z.number().int().min(1) }),
  options: { attempts: 8, backoff: { type: 'exponential', delay: 1000 }, concurrency: (config) => config.CONSUMER_CONCURRENCY },
  jobId: ({ approvalId, revision, point }) => `remind-${approvalId}-${revision}-${point}`,
});
