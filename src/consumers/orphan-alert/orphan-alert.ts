import { orphanedApprovalNotice } from '../../modules/orgs/admin-notices.js';
import { adminMailOptions, mailAdmins } from '../admin-notice-mail.js';
import { defineEventHandler } from '../consumer.js';

/** A request whose policy key matches no policy waits for a human: its organization's admins are told (see docs/operations.md, "Asynchronous work"). */
export const orphanAlertConsumer = defineEventHandler({
  name: 'orphan-alert',
  events: ['approval.orphaned'],
  options: adminMailOptions,
  handle: (services) => (event) =>
    mailAdmins(services, event.orgId, 'approval-orphaned', async (org) => {
      const approval = await services.db.approval.findFirst({ where: { id: String(event.data.approvalId), orgId: event.orgId } });
      return approval && orphanedApprovalNotice(org, approval);
    }),
});
