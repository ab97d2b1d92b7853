import { mailApproval } from '../../src/consumers/approval-mail/approval-mail.js';
import { pushApproval } from '../../src/consumers/push/push-notify.js';
import { remindInSlack } from '../../src/consumers/slack/slack-reminder.js';
import { remindInTeams } from '../../src/consumers/teams/teams-reminder.js';
import type { approvalReminderJob } from '../../src/jobs/approval-reminder.js';
import type { JobHandler, PayloadOf } from '../../src/jobs/job.js';
import { isLastAttempt } from '../../src/lib/job-retries.js';
import { ReminderStore } from '../../src/modules/notifications/reminder-store.js';
import type { Services } from '../../src/services.js';

/**
 * Sends a due reminder point (docs/members-and-channels.md#reminders) to the members who may decide
 * the approval and have not voted, on each channel that reaches them: a mail each, their devices,
 * a reply under the Slack message, a card in the Teams channel. Each notice is claimed before it
 * is sent, so a retry, or a second worker with the same point, sends only what has not left; the
 * schedule moves on to the next point once all of them are out.
 */
export function sendApprovalReminder(services: Services): JobHandler<PayloadOf<typeof approvalReminderJob>> {
  const reminders = new ReminderStore(services.sql);
  const { approvals, notifications, config } = services;
  return async (due, job) => {
    const state = await reminders.state(due);
    if (state !== 'due') return { skipped: state === 'gone' ? 'sent already, or the request is settled' : 'not due yet' };
    try {
      const notice = await approvals.findForNotice(due.orgId, due.approvalId);
      if (notice?.approval.status !== 'pending' || notice.approval.revision !== due.revision) return { skipped: 'request is settled' };
      const { approval } = notice;
      const sent = {
        email: await mailApproval(
          services,
          due.orgId,
          notice,
          await notifications.undecidedMembers(due.orgId, due.approvalId, 'email'),
          due.point,
        ),
        push: config.VAPID_PUBLIC_KEY
          ? await pushApproval(
              services,
              due.orgId,
              approval,
              await notifications.undecidedMembers(due.orgId, due.approvalId, 'console'),
              due.point,
            )
          : null,
        slack: await remindInSlack(services, due.orgId, approval, due.point),
        teams: await remindInTeams(services, due.orgId, approval, due.point),
      };
      await reminders.advance(due);
      return sent;
    } catch (error) {
      // A point that cannot be sent gives way to the next, rather than holding the schedule.
      if (isLastAttempt(job)) await reminders.advance(due);
      throw error;
    }
  };
}
