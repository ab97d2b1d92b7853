import type { AdminNotice } from '../modules/orgs/admin-notices.js';
import type { ConsumerContext } from './consumer.js';

/** What a mailing job did, kept by BullMQ as its return value and shown in Bull Board. */
export type MailOutcome = { sent: number } | { skipped: string };

/**
 * Mails a notice to an organization's admins: the addresses given at its creation and its members
 * with the admin role. `render` reads the rows the notice is about now, so a notice about
 * something deleted since is dropped rather than sent stale.
 */
export async function mailAdmins(
  { db, mailer, logger }: Pick<ConsumerContext, 'db' | 'mailer' | 'logger'>,
  orgId: string,
  kind: string,
  render: (org: { name: string }) => Promise<AdminNotice | null>,
): Promise<MailOutcome> {
  const org = await db.organization.findUnique({
    where: { id: orgId },
    include: { members: { where: { role: 'admin' }, select: { email: true } } },
  });
  const notice = org && (await render(org));
  if (!org || !notice) return { skipped: 'subject no longer exists' };
  const recipients = [
    ...new Map([...org.adminEmails, ...org.members.map((member) => member.email)].map((email) => [email.toLowerCase(), email])).values(),
  ];
  // Retrying cannot conjure an address, so the job completes; the warning is what an operator sees.
  if (recipients.length === 0) {
    logger.warn({ kind, orgId }, 'admin notice not sent: organization has no admin emails');
    return { skipped: 'no admin emails' };
  }
  await mailer.send({ to: recipients, ...notice });
  logger.info({ kind, orgId, recipients: recipients.length }, 'admin notice sent');
  return { sent: recipients.length };
}

/** Mail leaves at most a few a second per organization; retries back off from five seconds. */
export const adminMailOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 5000 },
  concurrency: (config: { CONSUMER_CONCURRENCY: number }) => config.CONSUMER_CONCURRENCY,
} as const;
