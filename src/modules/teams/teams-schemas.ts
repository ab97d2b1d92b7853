import { z } from 'zod';
import { storableString } from '../../lib/json-input.js';

const guid = (field: string) =>
  z
    .string()
    .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, `${field} must be a GUID`)
    .transform((value) => value.toLowerCase());

export const teamsIntegrationInputSchema = z
  .strictObject({
    appId: guid('appId').meta({ description: "The bot's Microsoft App ID (its Entra application's client id)." }),
    appSecret: z
      .string()
      .min(8)
      .max(256)
      .meta({ description: "A client secret of the bot's Entra application; sealed at rest, never returned." }),
    tenantId: guid('tenantId').meta({ description: 'The Entra tenant of the team; activities from other tenants are refused.' }),
    teamId: storableString('teamId').min(1).max(200).meta({ description: 'The team (its General channel id, 19:…@thread.tacv2).' }),
    channelId: storableString('channelId')
      .regex(/^19:[A-Za-z0-9._@-]{1,200}$/, 'channelId must be a Teams channel id (19:…@thread.tacv2)')
      .meta({ description: 'Where pending requests are posted; the bot must be installed in its team.' }),
  })
  .meta({ id: 'TeamsIntegrationInput' });
export type TeamsIntegrationInput = z.output<typeof teamsIntegrationInputSchema>;

export const teamsIntegrationViewSchema = z
  .object({
    appId: z.string(),
    tenantId: z.string(),
    teamId: z.string(),
    channelId: z.string(),
    connectedAt: z.iso.datetime(),
  })
  .meta({ id: 'TeamsIntegration' });
export type TeamsIntegrationView = z.output<typeof teamsIntegrationViewSchema>;

export const teamsLinkInputSchema = z
  .strictObject({ token: z.string().min(1).max(200).meta({ description: 'The last path segment of the link the Teams card showed.' }) })
  .meta({ id: 'TeamsLinkInput' });
