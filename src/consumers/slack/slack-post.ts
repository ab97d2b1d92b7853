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

    const key = noticeKey(event.orgId, approval, 'slack', connection.channel);
    if (!(await notifications.claim(key))) return { skipped: 'already posted' };
    const content = approvalMessage(approval, consoleUrl(config.PUBLIC_URL, approvalId), notice!.changes);
    let posted: { channel?: string; ts?: string };
    try {
      posted = await callSlack(services, connection, (client) => client.chat.postMessage({ channel: connection.channel, ...content }), {
        inChannel: true,
      });
    } catch (error) {
      const outcome = slackCallNotApplied(error) ? 'retry' : 'uncertain';
      await notifications.markFailed(key, outcome, error instanceof Error ? error.message : String(error));
      if (outcome === 'retry') throw error;
      logger.warn({ err: error, approvalId }, 'Slack post may or may not have been made; it is not made again');
      return { uncertain: true };
    }
    const message = { slackChannelId: posted.channel!, slackTs: posted.ts!, revision: approval.revision };
    await notifications.markSent(key, { slackChannelId: message.slackChannelId, slackTs: message.slackTs });
    // A vote or a settlement that committed while this was posted found no message to update.
    await refreshApprovalMessage(services, connection, approvalId, message, approval);
    return { posted: message };
  },
});
