import { z } from 'zod';
import { storableString } from '../../lib/json-input.js';
import { keyOwnerSchema } from './key-owner-schema.js';
import { SCOPES } from './tenant.js';

export const apiKeyViewSchema = z
  .object({
    id: z.uuid(),
    name: z.string().nullable(),
    scopes: z.array(z.enum(SCOPES)),
    owner: keyOwnerSchema.nullable().meta({
      description:
        'The member or service key the key belongs to, who votes through it; null for a service key (made by the CLI), and for a key whose owner is unknown (see ownerUnknown).',
    }),
    ownerUnknown: z.boolean().meta({
      description:
        'True when nobody knows whose the key is: it was made before keys had owners (or by such a key, then `owner` names that key), and nothing recorded its maker. It works, but votes for nobody and makes no keys (403 `key_unattributed`) until an operator gives it its owner with the CLI command `key:attribute`.',
    }),
    createdAt: z.iso.datetime(),
    revokedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyView = z.output<typeof apiKeyViewSchema>;

export const apiKeyCreateSchema = z
  .strictObject({
    name: storableString('name').trim().min(1).max(200).optional(),
    scopes: z
      .array(z.enum(SCOPES))
      .min(1)
      .refine((scopes) => new Set(scopes).size === scopes.length, 'scopes must not repeat'),
  })
  .meta({ id: 'ApiKeyCreateInput' });
export type ApiKeyCreateInput = z.output<typeof apiKeyCreateSchema>;

export const apiKeyCreatedSchema = z
  .object({ key: apiKeyViewSchema, secret: z.string().meta({ description: 'The key itself, shown this once.' }) })
  .meta({ id: 'ApiKeyCreated' });
export const apiKeyListSchema = z.object({ keys: z.array(apiKeyViewSchema) }).meta({ id: 'ApiKeyList' });
export const apiKeyIdParamsSchema = z.object({ id: z.uuid() });
