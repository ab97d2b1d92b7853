import type { Config } from '../../config.js';
import type { ApprovalView } from '../approvals/approval-schemas.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import { consoleUrl } from '../notifications/approval-notice.js';
import type { PostedTeamsActivity } from '../notifications/notification-store.js';
import { approvalCard, supersededCard } from './teams-cards.js';
import type { TeamsConnection } from './teams-service.js';

/** Teams' own failures back off from a second; its 429s wait for Retry-After instead. */
export const teamsJobOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  concurrency: (config: { CONSUMER_CONCURRENCY: number }) => config.CONSUMER_CONCURRENCY,
} as const;

/** A card replaced this many times in one go means the approval keeps changing: the next event's job goes on. */
const MAX_REFRESH_ROUNDS = 5;

/**
 * Replaces a posted card until it shows the approval as it is now: `shown` is what it shows
 * (null: unknown, replace at least once). Reading again after each update catches a vote or a
 * settlement that landed while the update was on its way, so concurrent jobs cannot leave an
 * older state on top.
 */
export async function refreshApprovalCard(
  services: { approvals: Pick<ApprovalService, 'findForNotice'>; config: Pick<Config, 'PUBLIC_URL'> },
  connection: TeamsConnection,
  approvalId: string,
  posted: Pick<PostedTeamsActivity, 'teamsConversationId' | 'teamsActivityId' | 'revision'>,
  shown: ApprovalView | null,
): Promise<void> {
  for (let round = 0; round < MAX_REFRESH_ROUNDS; round++) {
    const notice = await services.approvals.findForNotice(connection.orgId, approvalId);
    const approval = notice?.approval;
    if (!approval || (shown && shown.status === approval.status && shown.votes.length === approval.votes.length)) return;
    const url = consoleUrl(services.config.PUBLIC_URL, approvalId);
    // A card of an earlier revision shows how that revision ended, never the newer one.
    const card =
      posted.revision < approval.revision ? supersededCard(approval, posted.revision, url) : approvalCard(approval, url, notice.changes);
    await connection.bot.update(posted.teamsConversationId, posted.teamsActivityId, card);
    shown = approval;
  }
}
