import { z } from 'zod';
import { callSlack, slackJobOptions } from '../modules/slack/slack-calls.js';
import { slackEscape } from '../modules/slack/slack-messages.js';
import { deferOrRethrow } from '../lib/job-retries.js';
import { defineJob } from './job.js';

/**
 * What one Slack user is told privately after pressing a button: a link to connect their Slack
 * account (made when the job runs, so no token waits in Redis), or a text (a refusal, what to do).
 */
export const slackEphemeralPayload = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('link'), orgId: z.uuid(), channelId: z.string(), teamId: z.string(), userId: z.string() }),
  z.object({ kind: z.literal('text'), orgId: z.uuid(), channelId: z.string(), userId: z.string(), text: z.string().max(3000) }),
]);
export type SlackEphemeral = z.output<typeof slackEphemeralPayload>;

/** Ephemeral messages leave from a job: Slack's interaction request gets its answer at once. */
export const slackEphemeralJob = defineJob<SlackEphemeral>({
  queue: 'slack-ephemeral',
  payload: slackEphemeralPayload,
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
