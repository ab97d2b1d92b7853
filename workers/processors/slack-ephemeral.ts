import type { JobHandler, PayloadOf } from '../../src/jobs/job.js';
import type { slackEphemeralJob } from '../../src/jobs/slack-ephemeral.js';
import { deferOrRethrow } from '../../src/lib/job-retries.js';
import { callSlack } from '../../src/modules/slack/slack-calls.js';
import { slackEscape } from '../../src/modules/slack/slack-messages.js';
import type { Services } from '../../src/services.js';

/**
 * Tells one Slack user privately what became of their press: a link to connect their Slack account
 * (made now, so that no token waits in Redis), or a text.
 */
export function sendSlackEphemeral(
  services: Pick<Services, 'slack' | 'members' | 'slackRateLimiter'>,
): JobHandler<PayloadOf<typeof slackEphemeralJob>> {
  return async (notice, job, token) => {
    const connection = await services.slack.connection(notice.orgId);
    if (!connection) return { skipped: 'no Slack workspace is connected' };
    const text =
      notice.kind === 'link'
        ? `Your Slack account is not linked to a member of Approval Gate, so it cannot decide here yet. <${await services.members.issueSlackLink(
            notice.orgId,
            notice.teamId,
            notice.userId,
          )}|Link it in the console> (sign in there; the link works once, for 15 minutes), then press the button again.`
        : slackEscape(notice.text);
    try {
      await callSlack(
        services,
        connection,
        (client) => client.chat.postEphemeral({ channel: notice.channelId, user: notice.userId, text }),
        {
          inChannel: false,
        },
      );
    } catch (error) {
      return deferOrRethrow(error, job, token);
    }
    return { sent: notice.kind };
  };
}
