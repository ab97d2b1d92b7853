import { z } from 'zod';
import { storableString } from '../../lib/json-input.js';

const guid = (field: string) =>
  z
    .string()
    .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, `${field} must be a GUID`)
    .transform((value) => value.toLowerCase());

/** A PEM block of `label` (or, for keys, any `… PRIVATE KEY` block), whitespace around it allowed. */
const pem = (field: string, label: string) =>
  z
    .string()
    .max(16_384)
    .regex(
      new RegExp(`^\\s*-----BEGIN ([A-Z]+ )?${label}-----[\\s\\S]+-----END ([A-Z]+ )?${label}-----\\s*$`),
      `${field} must be a PEM ${label} block`,
    );

export const teamsIntegrationInputSchema = z
  .strictObject({
    appId: guid('appId').meta({ description: "The bot's Microsoft App ID (its Entra application's client id)." }),
    appSecret: z
      .string()
      .min(8)
      .max(256)
      .optional()
      .meta({ description: "A client secret of the bot's Entra application; sealed at rest, never returned. Give this or `certificate`." }),
    certificate: z
      .strictObject({
        certificate: pem('certificate.certificate', 'CERTIFICATE').meta({
          description: 'The X.509 certificate uploaded to the Entra application (RSA key), PEM.',
        }),
        privateKey: pem('certificate.privateKey', 'PRIVATE KEY').meta({
          description: "The certificate's private key, unencrypted PKCS #8 or PKCS #1 PEM; sealed at rest, never returned.",
        }),
      })
      .optional()
      .meta({
        description:
          "A certificate credential of the bot's Entra application, instead of a secret: tokens are asked for with a signed client assertion.",
      }),
    tenantId: guid('tenantId').meta({ description: 'The Entra tenant of the team; activities from other tenants are refused.' }),
    teamId: storableString('teamId').min(1).max(200).meta({ description: 'The team (its General channel id, 19:…@thread.tacv2).' }),
    channelId: storableString('channelId')
      .regex(/^19:[A-Za-z0-9._@-]{1,200}$/, 'channelId must be a Teams channel id (19:…@thread.tacv2)')
      .meta({ description: 'Where pending requests are posted; the bot must be installed in its team.' }),
  })
  .superRefine((input, context) => {
    if ((input.appSecret === undefined) === (input.certificate === undefined)) {
      context.addIssue({ code: 'custom', path: ['appSecret'], message: 'Give exactly one of appSecret and certificate.' });
    }
  })
  .meta({ id: 'TeamsIntegrationInput' });
export type TeamsIntegrationInput = z.output<typeof teamsIntegrationInputSchema>;

export const teamsIntegrationViewSchema = z
  .object({
    appId: z.string(),
    tenantId: z.string(),
    teamId: z.string(),
    channelId: z.string(),
    credential: z
      .discriminatedUnion('type', [
        z.object({ type: z.literal('secret') }),
        z.object({
          type: z.literal('certificate'),
          thumbprintSha256: z.string().meta({ description: "The certificate's SHA-256 thumbprint, hex, as Entra lists it." }),
          expiresAt: z.iso.datetime().meta({ description: 'When the certificate stops being valid: renew it before.' }),
        }),
      ])
      .meta({ description: 'How the bot authenticates to Entra; the secret or the private key is never returned.' }),
    connectedAt: z.iso.datetime(),
  })
  .meta({ id: 'TeamsIntegration' });
export type TeamsIntegrationView = z.output<typeof teamsIntegrationViewSchema>;

export const teamsLinkInputSchema = z
  .strictObject({ token: z.string().min(1).max(200).meta({ description: 'The last path segment of the link the Teams card showed.' }) })
  .meta({ id: 'TeamsLinkInput' });
