import { slackCallNotApplied } from '../../modules/slack/slack-api.js';
import { consoleUrl } from '../../modules/notifications/approval-notice.js';
import { noticeKey } from '../../modules/notifications/notification-store.js';
import { approvalMessage } from '../../modules/slack/slack-messages.js';
import { defineEventHandler } from '../consumer.js';
import { callSlack, refreshApprovalMessage, slackJobOptions } from '../../modules/slack/slack-calls.js';

/**
 * A pending approval is posted to the organization's Slack channel with Approve, Reject and
 * Request changes buttons (see docs/members-and-channels.md), when someone may decide it through Slack; each
 * revision after a request for changes is posted anew. The post is claimed before it is sent, as
 * mail is; the message (channel, ts) is recorded for the updates that follow.
 */
export const slackPostConsumer = defineEventHandler({
  name: 'slack-post',
  events: ['approval.created', 'approval.revised'],
  accepts: (event) => event.data.status === 'pending',
  servedOrgs: (orgIds, { notifications }) => notifications.orgsReachedThrough('slack', orgIds),
  options: slackJobOptions,
  handle: (services) => async (event) => {
    const { approvals, notifications, slack, config, logger } = services;
    const approvalId = String(event.data.approvalId);
    const connection = await slack.connection(event.orgId);
    if (!connection) return { skipped: 'no Slack workspace is connected' };
    const notice = await approvals.findForNotice(event.orgId, approvalId);
    const approval = notice?.approval;
    if (approval?.status !== 'pending') return { skipped: 'approval is no longer pending' };
    if ((await notifications.entitledMembers(event.orgId, approvalId, 'slack')).length === 0) {
      return { skipped: 'nobody may decide it through Slack' };
    }

    const content = approvalMessage(approval, consoleUrl(config.PUBLIC_URL, approvalId), notice!.changes);
    const sending = await notifications.sendOnce(
      noticeKey(event.orgId, approval, 'slack', connection.channel),
      async () => {
        const posted = await callSlack(
          services,
          connection,
          (client) => client.chat.postMessage({ channel: connection.channel, ...content }),
          {
            inChannel: true,
          },
        );
        return { slackChannelId: posted.channel!, slackTs: posted.ts! };
      },
      { notApplied: slackCallNotApplied, logger, uncertainly: 'Slack post may or may not have been made; it is not made again' },
    );
    if ('claimed' in sending) return { skipped: 'already posted' };
    if ('uncertain' in sending) return sending;
    const message = { ...sending.sent, revision: approval.revision };
    // A vote or a settlement that committed while this was posted found no message to update.
    await refreshApprovalMessage(services, connection, approvalId, message, approval);
    return { posted: message };
  },
});
