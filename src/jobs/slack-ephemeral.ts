import { callSlack, slackJobOptions } from '../modules/slack/slack-calls.js';
import { slackEscape } from '../modules/slack/slack-messages.js';
import { slackEphemeralSchema, type SlackEphemeral } from '../modules/slack/slack-schemas.js';
import { deferOrRethrow } from '../lib/job-retries.js';
import { defineJob } from './job.js';

/** Ephemeral messages leave from a job: Slack's interaction request gets its answer at once. */
export const slackEphemeralJob = defineJob<SlackEphemeral>({
  queue: 'slack-ephemeral',
  payload: slackEphemeralSchema,
  options: slackJobOptions,
  processor: (services) => async (notice, job, token) => {
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
  },
});
