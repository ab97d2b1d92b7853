import { formatUtc } from '../../lib/display-time.js';
import { RetryLater } from '../../lib/job-retries.js';
import { consoleUrl, describeStage } from '../../modules/notifications/approval-notice.js';
import { type EntitledMember, noticeKey } from '../../modules/notifications/notification-store.js';
import { PushRefused } from '../../modules/push/push-service.js';
import type { ApprovalView } from '../../modules/approvals/approval-schemas.js';
import { defineEventHandler, type ConsumerContext } from '../consumer.js';

/**
 * A pending approval is pushed to every device of every member who may decide it in the console
 * (see docs/members-and-channels.md): a notification whose click opens the request, where deciding
 * needs the member's session. Each revision is told anew; with stages, each stage's reviewers when
 * it begins (a member once per revision). A notification is claimed per device
 * before it is sent, so no retry sends it twice; a device whose push service answers 404 or 410
 * is forgotten.
 */
export const pushNotifyConsumer = defineEventHandler({
  name: 'push-notify',
  events: ['approval.created', 'approval.revised', 'approval.stage_completed'],
  accepts: (event, config) => event.data.status === 'pending' && config.VAPID_PUBLIC_KEY !== undefined,
  servedOrgs: (orgIds, { notifications }) => notifications.orgsReachedThrough('push', orgIds),
  options: {
    attempts: 8,
    backoff: { type: 'exponential', delay: 1000 },
    concurrency: (config: { CONSUMER_CONCURRENCY: number }) => config.CONSUMER_CONCURRENCY,
  },
  handle: (context) => async (event) => {
    const approvalId = String(event.data.approvalId);
    const notice = await context.approvals.findForNotice(event.orgId, approvalId);
    if (notice?.approval.status !== 'pending') return { skipped: 'approval is no longer pending' };
    return pushApproval(
      context,
      event.orgId,
      notice.approval,
      await context.notifications.entitledMembers(event.orgId, approvalId, 'console'),
    );
  },
});

/**
 * Pushes the pending approval to every device of `members`: the request itself, or its
 * `reminder`th reminder (docs/members-and-channels.md#reminders). A notification is claimed per
 * device before it is sent, so no retry sends it twice; a device whose push service answers 404 or
 * 410 is forgotten.
 */
export async function pushApproval(
  { notifications, push, config, logger }: Pick<ConsumerContext, 'notifications' | 'push' | 'config' | 'logger'>,
  orgId: string,
  approval: ApprovalView,
  members: readonly EntitledMember[],
  reminder?: number,
): Promise<Record<'sent' | 'gone' | 'retry', number>> {
  const devices = await push.devicesOf(members.map((member) => member.id));
  const message = {
    title: `${reminder === undefined ? 'Approval' : 'Reminder: approval'} needed: ${approval.action}${approval.revision > 1 ? ` (revision ${approval.revision})` : ''}`,
    body: [
      describeStage(approval),
      approval.agent ? `Agent: ${approval.agent}` : null,
      `Policy: ${approval.policyKey}`,
      approval.expiresAt ? `Until ${formatUtc(approval.expiresAt)}` : null,
    ]
      .filter(Boolean)
      .join(' · '),
    url: consoleUrl(config.PUBLIC_URL, approval.id),
    tag: `approval-${approval.id}`,
  };
  const counts = { sent: 0, gone: 0, retry: 0 };
  let retryLater: unknown = null;
  for (const device of devices) {
    const key = noticeKey(orgId, approval, 'push', device.id, reminder);
    if (!(await notifications.claim(key))) continue;
    try {
      const outcome = await push.send(device, message);
      if (outcome === 'sent') await notifications.markSent(key);
      else await notifications.markFailed(key, 'uncertain', 'the push service dropped the subscription (404/410); it was removed');
      counts[outcome] += 1;
    } catch (error) {
      // An answer from the push service, or no connection at all, delivered nothing: the device is tried again.
      const notApplied = error instanceof PushRefused || error instanceof RetryLater;
      await notifications.markFailed(key, notApplied ? 'retry' : 'uncertain', error instanceof Error ? error.message : String(error));
      if (!notApplied)
        logger.warn(
          { err: error, approvalId: approval.id, device: device.id },
          'push may or may not have been delivered; it is not sent again',
        );
      else {
        counts.retry += 1;
        retryLater = error;
      }
    }
  }
  if (retryLater) throw retryLater;
  return counts;
}
