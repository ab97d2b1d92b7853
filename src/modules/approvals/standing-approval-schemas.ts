import { z } from 'zod';
import { pageLimitSchema } from '../../lib/paging.js';

/** A standing approval as the API shows it (docs/policies.md#standing-approvals). */
export const standingApprovalViewSchema = z
  .object({
    id: z.uuid(),
    policyKey: z.string(),
    action: z.string(),
    agent: z.string().nullable(),
    requester: z.string().meta({ description: 'The principal whose requests it approves: user:<member id> or api_key:<service key id>.' }),
    payloadHash: z.string().nullable().meta({ description: 'The payload a request must repeat exactly; null when `fields` is given.' }),
    fields: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: 'The top-level payload fields, with their values, a request must repeat; null for the whole payload.' }),
    grantedBy: z.object({ type: z.literal('user'), id: z.uuid(), email: z.string() }),
    sourceApprovalId: z.uuid().meta({ description: 'The request whose approval granted it.' }),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime(),
    revokedAt: z.iso.datetime().nullable(),
    revokedBy: z.object({ type: z.string(), id: z.string() }).nullable(),
    active: z.boolean().meta({ description: 'Neither revoked nor past expiresAt: it approves matching new requests.' }),
  })
  .meta({ id: 'StandingApproval' });
export type StandingApprovalView = z.output<typeof standingApprovalViewSchema>;

export const standingApprovalListQuerySchema = z.strictObject({
  active: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional()
    .meta({ description: 'true: only those still active; false: only revoked or expired ones. Both when absent.' }),
  limit: pageLimitSchema,
});

export const standingApprovalListSchema = z
  .object({ standingApprovals: z.array(standingApprovalViewSchema) })
  .meta({ id: 'StandingApprovalList' });

export const standingApprovalIdParamsSchema = z.object({ id: z.uuid() });
