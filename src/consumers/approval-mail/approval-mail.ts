import { mailNotAccepted } from '../../lib/mailer.js';
import { approvalMail } from '../../modules/notifications/approval-mail.js';
import { consoleUrl } from '../../modules/notifications/approval-notice.js';
import type { ApprovalNotice } from '../../modules/approvals/approval-service.js';
import { type EntitledMember, noticeKey } from '../../modules/notifications/notification-store.js';
import { adminMailOptions } from '../admin-notice-mail.js';
import { defineEventHandler, type ConsumerContext } from '../consumer.js';

type MailContext = Pick<ConsumerContext, 'config' | 'notifications' | 'decisionLinks' | 'mailer' | 'logger'>;

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * An approval became pending (created pending, an orphan, an escalation's successor: each is an
 * `approval.created` with status pending; or revised after a request for changes, an
 * `approval.revised` with status pending, told as a new request), or moved to its next stage of
 * reviewers (an `approval.stage_completed` with status pending): every member who may decide it
 * by email, with email notifications on, gets one mail per revision with their own decision links
 * (see docs/members-and-channels.md), so a stage's reviewers are told when their stage begins, and
 * a member who is a reviewer of two stages is mailed once. Each member's notice is claimed before it is sent, so a retry
 * mails only those whose mail did not leave.
 */
export const approvalMailConsumer = defineEventHandler({
  name: 'approval-mail',
  events: ['approval.created', 'approval.revised', 'approval.stage_completed'],
  accepts: (event) => event.data.status === 'pending',
  servedOrgs: (orgIds, { notifications }) => notifications.orgsReachedThrough('email', orgIds),
  options: adminMailOptions,
  handle: (context) => async (event) => {
    const approvalId = String(event.data.approvalId);
    const notice = await context.approvals.findForNotice(event.orgId, approvalId);
    if (notice?.approval.status !== 'pending') return { skipped: 'approval is no longer pending' };
    const members = await context.notifications.entitledMembers(event.orgId, approvalId, 'email');
    return mailApproval(context, event.orgId, notice, members);
  },
});

/**
 * Mails the pending approval to each of `members` with email notifications on, with their own
 * decision links: the request itself, or its `reminder`th reminder (docs/members-and-channels.md#reminders).
 * Each member's mail is claimed before it is sent, so a retry mails only those whose mail did not leave.
 */
export async function mailApproval(
  { config, notifications, decisionLinks, mailer, logger }: MailContext,
  orgId: string,
  { approval, changes }: ApprovalNotice,
  entitled: readonly EntitledMember[],
  reminder?: number,
): Promise<{ sent: number; entitled: number }> {
  const members = entitled.filter((member) => member.emailNotifications);
  let sent = 0;
  const notAccepted: string[] = [];
  for (const member of members) {
    const key = noticeKey(orgId, approval, 'email', member.id, reminder);
    if (!(await notifications.claim(key))) continue;
    const links = await decisionLinks.issue(orgId, approval, member.id).catch(async (error: unknown) => {
      await notifications.markFailed(key, 'retry', errorText(error));
      throw error;
    });
    const mail = approvalMail({
      approval,
      changes,
      links: { ...links, console: consoleUrl(config.PUBLIC_URL, approval.id), settings: `${config.PUBLIC_URL}/console/settings` },
      reminder: reminder !== undefined,
    });
    try {
      await mailer.send({ to: [member.email], ...mail });
    } catch (error) {
      // Sent again only when the failure proves the server did not take it; otherwise never.
      const outcome = mailNotAccepted(error) ? 'retry' : 'uncertain';
      await notifications.markFailed(key, outcome, errorText(error));
      if (outcome === 'retry') notAccepted.push(`${member.id}: ${errorText(error)}`);
      else
        logger.warn(
          { err: error, approvalId: approval.id, memberId: member.id },
          'approval mail may or may not have left; it is not sent again',
        );
      continue;
    }
    await notifications.markSent(key);
    sent += 1;
  }
  if (notAccepted.length > 0)
    throw new Error(`approval mail not accepted for ${notAccepted.length} member(s), retrying: ${notAccepted[0]}`);
  logger.info({ orgId, approvalId: approval.id, sent, entitled: members.length, reminder }, 'approval mails sent');
  return { sent, entitled: members.length };
}
