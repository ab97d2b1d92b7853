import { slackJobOptions } from '../modules/slack/slack-calls.js';
import { slackEphemeralSchema, type SlackEphemeral } from '../modules/slack/slack-schemas.js';
import { defineJob } from './job.js';

/** Ephemeral messages leave from a job: Slack's interaction request gets its answer at once. */
export const slackEphemeralJob = defineJob<SlackEphemeral>({
  queue: 'slack-ephemeral',
  payload: slackEphemeralSchema,
  options: slackJobOptions,
});
