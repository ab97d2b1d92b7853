import { DelayedError } from 'bullmq';
import type { approvalExpiryJob } from '../../src/jobs/approval-expiry.js';
import type { JobHandler, PayloadOf } from '../../src/jobs/job.js';
import type { Actor } from '../../src/modules/audit/audit-events.js';
import type { Services } from '../../src/services.js';

const actor: Actor = { type: 'system', id: 'expiry-worker' };

/** Settles an approval whose deadline has passed, or waits for a deadline this process saw early. */
export function expireApproval({ approvals }: Pick<Services, 'approvals'>): JobHandler<PayloadOf<typeof approvalExpiryJob>> {
  return async ({ orgId, approvalId }, job, token) => {
    const outcome = await approvals.timeOut(orgId, approvalId, actor);
    if (outcome.kind === 'not_due') {
      // Early by clock differences between Redis, this process and the database: wait for it.
      await job.moveToDelayed(outcome.dueAt.getTime(), token);
      throw new DelayedError();
    }
    return outcome;
  };
}
