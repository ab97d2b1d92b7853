import type { ApprovalView } from '../../modules/approvals/approval-schemas.js';
import { consoleUrl, describeReminder } from '../../modules/notifications/approval-notice.js';
import { noticeKey } from '../../modules/notifications/notification-store.js';
import { reminderCard } from '../../modules/teams/teams-cards.js';
import { teamsCallNotApplied } from '../../modules/teams/teams-connector.js';
import type { ConsumerContext } from '../consumer.js';

/**
 * The `reminder`th reminder of a pending approval in Teams (docs/members-and-channels.md#reminders):
 * a card in the channel, when a card was posted for its revision, naming the members who may decide
 * it through Teams and have not; the buttons stay on the request's own card. Claimed per point
 * before it is sent, as the post is.
 */
export async function remindInTeams(
  { teams, notifications, config, logger }: Pick<ConsumerContext, 'teams' | 'notifications' | 'config' | 'logger'>,
  orgId: string,
  approval: ApprovalView,
  reminder: number,
): Promise<{ sent: number }> {
  const connection = await teams.connection(orgId);
  if (!connection) return { sent: 0 };
  const posted = await notifications.postedTeamsActivities(approval.id, approval.revision);
  const undecided = posted.length > 0 ? await notifications.undecidedMembers(orgId, approval.id, 'teams') : [];
  if (undecided.length === 0) return { sent: 0 };
  const sending = await notifications.sendOnce(
    noticeKey(orgId, approval, 'teams', connection.channelId, reminder),
    async () => {
      await connection.bot.post(
        connection.channelId,
        reminderCard(describeReminder(approval, undecided), consoleUrl(config.PUBLIC_URL, approval.id)),
      );
    },
    { notApplied: teamsCallNotApplied, logger, uncertainly: 'Teams reminder may or may not have been posted; it is not posted again' },
  );
  return { sent: 'sent' in sending ? 1 : 0 };
}
