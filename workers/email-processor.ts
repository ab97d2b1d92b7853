import type { Job } from 'bullmq';
import type { Database } from '../src/data/database.js';
import type { Logger } from '../src/lib/logger.js';
import type { Mailer } from '../src/lib/mailer.js';
import { endpointDisabledNotice, orphanedApprovalNotice, type AdminNotice } from '../src/modules/orgs/admin-notices.js';
import { emailJob, type EmailJob } from '../src/queues/job-definitions.js';

/** What a job did, kept by BullMQ as its return value and shown in Bull Board. */
export type EmailOutcome = { sent: number } | { skipped: string };

/**
 * Mails an organization's admins. The payload carries ids only: the rows are read now, so a
 * notice about an approval or endpoint deleted since is dropped rather than sent stale.
 */
export function createEmailProcessor({ db, mailer, logger }: { db: Database; mailer: Mailer; logger: Logger }) {
  async function render(payload: EmailJob, org: { name: string }): Promise<AdminNotice | null> {
    if (payload.kind === 'approval-orphaned') {
      const approval = await db.approval.findFirst({ where: { id: payload.approvalId, orgId: payload.orgId } });
      return approval && orphanedApprovalNotice(org, approval);
    }
    const endpoint = await db.webhookEndpoint.findFirst({ where: { id: payload.endpointId, orgId: payload.orgId } });
    return endpoint && endpointDisabledNotice(org, endpoint, payload.reason);
  }

  return async function processEmail(job: Pick<Job, 'data'>): Promise<EmailOutcome> {
    const payload = emailJob.payload.parse(job.data);
    const org = await db.organization.findUnique({ where: { id: payload.orgId } });
    const notice = org && (await render(payload, org));
    if (!org || !notice) return { skipped: 'subject no longer exists' };
    // Retrying cannot conjure an address, so the job completes; the warning is what an operator sees.
    if (org.adminEmails.length === 0) {
      logger.warn({ kind: payload.kind, orgId: org.id }, 'admin notice not sent: organization has no admin emails');
      return { skipped: 'no admin emails' };
    }
    await mailer.send({ to: org.adminEmails, ...notice });
    logger.info({ kind: payload.kind, orgId: org.id, recipients: org.adminEmails.length }, 'admin notice sent');
    return { sent: org.adminEmails.length };
  };
}
