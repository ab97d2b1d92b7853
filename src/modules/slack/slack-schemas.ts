import { z } from 'zod';

export const slackIntegrationInputSchema = z
  .strictObject({
    botToken: z
      .string()
      .max(256)
      .regex(/^xoxb-[A-Za-z0-9-]+$/, 'botToken must be a Slack bot token (xoxb-…)'),
    signingSecret: z.string().min(8).max(256).meta({ description: "The Slack app's signing secret." }),
    channel: z
      .string()
      .regex(/^#?[A-Za-z0-9._-]{1,80}$/, 'channel must be a channel id (C0123…) or name (#approvals)')
      .meta({ description: 'Where pending requests are posted; the bot must be a member of it.' }),
  })
  .meta({ id: 'SlackIntegrationInput' });
export type SlackIntegrationInput = z.output<typeof slackIntegrationInputSchema>;

export const slackIntegrationViewSchema = z
  .object({
    channel: z.string(),
    teamId: z.string().meta({ description: 'The workspace the bot token belongs to (auth.test).' }),
    connectedAt: z.iso.datetime(),
  })
  .meta({ id: 'SlackIntegration' });
export type SlackIntegrationView = z.output<typeof slackIntegrationViewSchema>;

export const slackLinkInputSchema = z
  .strictObject({ token: z.string().min(1).max(200).meta({ description: 'The last path segment of the link Slack showed.' }) })
  .meta({ id: 'SlackLinkInput' });
export type SlackLinkInput = z.output<typeof slackLinkInputSchema>;

export const slackLinkPreviewSchema = z
  .object({
    teamId: z.string().meta({ description: 'The Slack workspace of the account the link would link.' }),
    userId: z.string().meta({ description: 'The Slack user the link was sent to.' }),
    expiresAt: z.iso.datetime().meta({ description: 'The link works until then, once.' }),
    linkedToYou: z.boolean().meta({ description: 'Whether this Slack account is already linked to you.' }),
  })
  .meta({ id: 'SlackLinkPreview' });
export type SlackLinkPreview = z.output<typeof slackLinkPreviewSchema>;

/**
 * What one Slack user is told privately after pressing a button: a link to connect their Slack
 * account (made when the job runs, so no token waits in Redis), or a text (a refusal, what to do).
 */
export const slackEphemeralSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('link'), orgId: z.uuid(), channelId: z.string(), teamId: z.string(), userId: z.string() }),
  z.object({ kind: z.literal('text'), orgId: z.uuid(), channelId: z.string(), userId: z.string(), text: z.string().max(3000) }),
]);
export type SlackEphemeral = z.output<typeof slackEphemeralSchema>;
