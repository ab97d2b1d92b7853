import type { WebClient } from '@slack/web-api';
import { RetryLater } from '../../lib/job-retries.js';
import type { Config } from '../../config.js';
import type { ApprovalView } from '../approvals/approval-schemas.js';
import type { ApprovalService } from '../approvals/approval-service.js';
import { consoleUrl } from '../notifications/approval-notice.js';
import { isSlackRateLimited } from './slack-api.js';
import { approvalMessage, supersededMessage } from './slack-messages.js';
import type { SlackConnection } from './slack-service.js';
import type { SlackRateLimiter } from './slack-rate-limiter.js';

/** Slack's own failures (5xx, ok:false) back off from a second; its 429s wait for Retry-After instead. */
export const slackJobOptions = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  concurrency: (config: { CONSUMER_CONCURRENCY: number }) => config.CONSUMER_CONCURRENCY,
} as const;

/** The longest wait for a channel's next slot inside a job; a longer one sends the job back to the queue. */
const INLINE_WAIT_MS = 2_000;

/** A message rewritten this many times in one go means the approval keeps changing: the next event's job goes on. */
const MAX_REFRESH_ROUNDS = 5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Makes a Slack call from a job. `inChannel` calls (messages) wait for the channel's slot in the
 * Redis limiter first; any call answered 429 closes the channel for Retry-After and runs the job
 * again after it (RetryLater), without counting an attempt.
 */
export async function callSlack<T>(
  { slackRateLimiter }: { slackRateLimiter: SlackRateLimiter },
  connection: SlackConnection,
  call: (client: WebClient) => Promise<T>,
  { inChannel }: { inChannel: boolean },
): Promise<T> {
  const channelKey = `${connection.teamId}:${connection.channel}`;
  while (inChannel) {
    const waitMs = await slackRateLimiter.take(channelKey);
    if (waitMs === 0) break;
    if (waitMs > INLINE_WAIT_MS) throw new RetryLater(waitMs, `Slack channel ${connection.channel} has no free slot`);
    await sleep(waitMs);
  }
  try {
    return await call(await connection.client());
  } catch (error) {
    if (!isSlackRateLimited(error)) throw error;
    const waitMs = error.retryAfter * 1000;
    await slackRateLimiter.pause(channelKey, waitMs);
    throw new RetryLater(waitMs, `Slack answered 429 with Retry-After ${error.retryAfter}`);
  }
}

/** The same status and votes: the message shows this approval as it is. */
function sameState(a: ApprovalView, b: ApprovalView): boolean {
  return a.status === b.status && a.votes.length === b.votes.length;
}

/**
 * Rewrites a posted message until it shows the approval as it is now: `shown` is what it shows
 * (null: unknown, rewrite at least once). Reading again after each update catches a vote or a
 * settlement that landed while the update was on its way, so concurrent jobs cannot leave an
 * older state on top.
 */
export async function refreshApprovalMessage(
  services: { approvals: Pick<ApprovalService, 'findForNotice'>; slackRateLimiter: SlackRateLimiter; config: Pick<Config, 'PUBLIC_URL'> },
  connection: SlackConnection,
  approvalId: string,
  message: { slackChannelId: string; slackTs: string; revision: number },
  shown: ApprovalView | null,
): Promise<void> {
  for (let round = 0; round < MAX_REFRESH_ROUNDS; round++) {
    const notice = await services.approvals.findForNotice(connection.orgId, approvalId);
    const approval = notice?.approval;
    if (!approval || (shown && sameState(shown, approval))) return;
    const url = consoleUrl(services.config.PUBLIC_URL, approvalId);
    // A message of an earlier revision (its update raced the revision) shows how that revision ended, never the newer one.
    const content =
      message.revision < approval.revision
        ? supersededMessage(approval, message.revision, url)
        : approvalMessage(approval, url, notice.changes);
    await callSlack(
      services,
      connection,
      (client) => client.chat.update({ channel: message.slackChannelId, ts: message.slackTs, ...content }),
      {
        inChannel: true,
      },
    );
    shown = approval;
  }
}
