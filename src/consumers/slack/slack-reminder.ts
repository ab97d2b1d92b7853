import type { ApprovalView } from '../../modules/approvals/approval-schemas.js';
import { consoleUrl, describeReminder } from '../../modules/notifications/approval-notice.js';
import { noticeKey } from '../../modules/notifications/notification-store.js';
import { slackCallNotApplied } from '../../modules/slack/slack-api.js';
import { callSlack } from '../../modules/slack/slack-calls.js';
import { slackEscape } from '../../modules/slack/slack-messages.js';
import type { ConsumerContext } from '../consumer.js';

/**
 * The `reminder`th reminder of a pending approval in Slack (docs/members-and-channels.md#reminders):
 * a reply in the thread of each message posted for its revision, naming the members who may decide
 * it through Slack and have not. Claimed per message and point before it is sent, as the post is.
 */
export async function remindInSlack(
  context: Pick<ConsumerContext, 'slack' | 'notifications' | 'slackRateLimiter' | 'config' | 'logger'>,
  orgId: string,
  approval: ApprovalView,
  reminder: number,
): Promise<{ sent: number }> {
  const { slack, notifications, config, logger } = context;
  const connection = await slack.connection(orgId);
  if (!connection) return { sent: 0 };
  const undecided = await notifications.undecidedMembers(orgId, approval.id, 'slack');
  if (undecided.length === 0) return { sent: 0 };
  const text = `${slackEscape(describeReminder(approval, undecided))} <${consoleUrl(config.PUBLIC_URL, approval.id)}|Open in console>`;
  let sent = 0;
  for (const message of await notifications.postedSlackMessages(approval.id, approval.revision)) {
    const sending = await notifications.sendOnce(
      noticeKey(orgId, approval, 'slack', message.recipient, reminder),
      async () => {
        await callSlack(
          context,
          connection,
          (client) => client.chat.postMessage({ channel: message.slackChannelId, thread_ts: message.slackTs, text }),
          { inChannel: true },
        );
      },
      { notApplied: slackCallNotApplied, logger, uncertainly: 'Slack reminder may or may not have been posted; it is not posted again' },
    );
    if ('sent' in sending) sent += 1;
  }
  return { sent };
}
