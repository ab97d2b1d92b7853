import { DelayedError, type Job } from 'bullmq';
import type { ApprovalService } from '../src/modules/approvals/approval-service.js';
import type { Actor } from '../src/modules/audit/audit-events.js';
import { expiryJob } from '../src/queues/job-definitions.js';

const actor: Actor = { type: 'system', id: 'expiry-worker' };

/** Settles an approval at its deadline: expired, or escalated with its successor. */
export function createExpiryProcessor(approvals: ApprovalService) {
  return async (job: Job, token?: string) => {
    const { orgId, approvalId } = expiryJob.payload.parse(job.data);
    const outcome = await approvals.timeOut(orgId, approvalId, actor);
    if (outcome.kind === 'not_due') {
      // Early by clock differences between Redis, this process and the database: wait for it.
      await job.moveToDelayed(outcome.dueAt.getTime(), token);
      throw new DelayedError();
    }
    return outcome;
  };
}
