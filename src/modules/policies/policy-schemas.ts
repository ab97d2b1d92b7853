import { z } from 'zod';
import { storableString } from '../../lib/json-input.js';

export const MAX_TIMEOUT_SECONDS = 2_592_000;

const policyKey = (label: string) => storableString(label).min(1).max(200);

export const policyRuleSchema = z
  .object({
    when: storableString('when')
      .min(1)
      .max(4096)
      .meta({ description: 'CEL expression over action, payload, agent and context; must return a boolean.' }),
    outcome: z.enum(['allow', 'review']),
  })
  .strict();

export const policyDocumentSchema = z
  .object({
    rules: z.array(policyRuleSchema).max(100).default([]),
    defaultOutcome: z.enum(['allow', 'review']).default('review'),
    timeoutSeconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).default(3600),
    onTimeout: z.enum(['expire', 'escalate']).default('expire'),
    escalateTo: policyKey('escalateTo').nullable().default(null),
  })
  .strict()
  .meta({ id: 'PolicyDocument' });
export type PolicyDocument = z.output<typeof policyDocumentSchema>;
export type PolicyOutcome = PolicyDocument['defaultOutcome'];

export const policyViewSchema = policyDocumentSchema
  .extend({
    key: z.string(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Policy' });
export type PolicyView = z.output<typeof policyViewSchema>;

export const policyListSchema = z.object({ policies: z.array(policyViewSchema) }).meta({ id: 'PolicyList' });

export const policyKeyParamsSchema = z.object({ key: policyKey('key') });
