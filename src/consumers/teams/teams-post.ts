import { consoleUrl } from '../../modules/notifications/approval-notice.js';
import { noticeKey } from '../../modules/notifications/notification-store.js';
import { approvalCard } from '../../modules/teams/teams-cards.js';
import { refreshApprovalCard, teamsJobOptions } from '../../modules/teams/teams-cards-refresh.js';
import { teamsCallNotApplied } from '../../modules/teams/teams-connector.js';
import { defineEventHandler } from '../consumer.js';

/**
 * A pending approval is posted to the organization's Teams channel as an Adaptive Card with
 * Approve, Reject and Request changes (see docs/members-and-channels.md), when someone may decide
 * it through Teams; each revision after a request for changes is posted anew. The post is claimed
 * before it is sent, as Slack's is; the activity is recorded for the updates that follow.
 */
export const teamsPostConsumer = defineEventHandler({
  name: 'teams-post',
  events: ['approval.created', 'approval.revised'],
  accepts: (event) => event.data.status === 'pending',
  servedOrgs: (orgIds, { notifications }) => notifications.orgsReachedThrough('teams', orgIds),
  options: teamsJobOptions,
  handle: (services) => async (event) => {
    const { approvals, notifications, teams, config, logger } = services;
    const approvalId = String(event.data.approvalId);
    const connection = await teams.connection(event.orgId);
    if (!connection) return { skipped: 'no Teams bot is connected' };
    const notice = await approvals.findForNotice(event.orgId, approvalId);
    const approval = notice?.approval;
    if (approval?.status !== 'pending') return { skipped: 'approval is no longer pending' };
    if ((await notifications.entitledMembers(event.orgId, approvalId, 'teams')).length === 0) {
      return { skipped: 'nobody may decide it through Teams' };
    }

    const sending = await notifications.sendOnce(
      noticeKey(event.orgId, approval, 'teams', connection.channelId),
      async () => ({
        teamsConversationId: connection.channelId,
        teamsActivityId: await connection.bot.post(
          connection.channelId,
          approvalCard(approval, consoleUrl(config.PUBLIC_URL, approvalId), notice!.changes),
        ),
      }),
      { notApplied: teamsCallNotApplied, logger, uncertainly: 'Teams post may or may not have been made; it is not made again' },
    );
    if ('claimed' in sending) return { skipped: 'already posted' };
    if ('uncertain' in sending) return sending;
    const posted = { ...sending.sent, revision: approval.revision };
    // A vote or a settlement that committed while this was posted found no card to update.
    await refreshApprovalCard(services, connection, approvalId, posted, approval);
    return { posted };
  },
});
