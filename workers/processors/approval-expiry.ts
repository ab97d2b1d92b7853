import { DelayedError } from 'bullmq';
import type { approvalExpiryJob } from '../../src/jobs/approval-expiry.js';
import type { JobHandler, PayloadOf } from '../../src/jobs/job.js';
import type { Actor } from '../../src/modules/audit/audit-events.js';
import type { Services } from '../../src/services.js';

const actor: Actor = { type: 'system', id: 'expiry-worker' };

/** Settles an approval at its deadline: waits for one at most the lead away, gives the job back to the queue for a later one. */
export function expireApproval({
  approvals,
  config,
}: Pick<Services, 'approvals' | 'config'>): JobHandler<PayloadOf<typeof approvalExpiryJob>> {
  // Started up to the lead ahead of the deadline (workers/deadline-watcher.ts), later by the queue's own lateness.
  const waitUpToMs = config.EXPIRY_LEAD_MS;
  return async ({ orgId, approvalId }, job, token) => {
    const outcome = await approvals.timeOut(orgId, approvalId, actor, waitUpToMs);
    if (outcome.kind === 'not_due') {
      // Farther off than the lead (a deadline moved by a revision), or not reached by the database's clock.
      await job.moveToDelayed(outcome.retryAt.getTime(), token);
      throw new DelayedError();
    }
    return outcome;
  };
}
