import { z } from 'zod';
import { queryInteger, storableInstant, storableString } from '../../lib/json-input.js';
import { AUDIT_EVENT_TYPES } from './audit-events.js';

/** The CSV columns of docs/audit.md, in order; also the keys of an exported event. */
export const AUDIT_CSV_COLUMNS = ['seq', 'createdAt', 'type', 'actor', 'data', 'prevHash', 'hash'] as const;

const instantSchema = (label: string) =>
  storableInstant(label).meta({ description: 'ISO 8601 date-time with Z or an offset (or a date, meaning its UTC midnight).' });

const filterShape = {
  from: instantSchema('from').optional().meta({ description: 'Only events at or after this time.' }),
  to: instantSchema('to').optional().meta({ description: 'Only events at or before this time.' }),
  type: z.enum(AUDIT_EVENT_TYPES).optional(),
  action: storableString('action').min(1).max(200).optional().meta({ description: 'Only events whose data.action is exactly this.' }),
  agent: storableString('agent').min(1).max(200).optional().meta({ description: 'Only events whose data.agent is exactly this.' }),
};

function toNotBeforeFrom(filters: { from?: Date; to?: Date }, ctx: z.RefinementCtx): void {
  if (filters.from && filters.to && filters.to < filters.from) {
    ctx.addIssue({ code: 'custom', path: ['to'], message: 'to must not be before from' });
  }
}

/**
 * Query of GET /v1/audit. Unknown parameters are refused: a misspelt filter (`agnet`) would
 * otherwise silently export the whole chain.
 */
export const auditQuerySchema = z
  .strictObject({
    ...filterShape,
    after: queryInteger('after', 0, Number.MAX_SAFE_INTEGER)
      .optional()
      .meta({ description: 'Only events with a greater seq (the paging cursor).' }),
    limit: queryInteger('limit', 1, 1000).default(500).meta({ description: 'Page size, 1-1000.' }),
    format: z.enum(['json', 'csv']).default('json'),
    checkpoints: z
      .enum(['true', 'false'])
      .default('false')
      .transform((value) => value === 'true')
      .meta({
        description:
          'Adds the signed checkpoints whose seq is in the range of the page (JSON: `checkpoints`; CSV: rows of type audit.checkpoint).',
      }),
    verify: z
      .enum(['true', 'false'])
      .default('false')
      .transform((value) => value === 'true')
      .meta({ description: 'Adds `verification` for the whole chain (JSON only).' }),
  })
  .superRefine((query, ctx) => {
    toNotBeforeFrom(query, ctx);
    if (query.verify && query.format === 'csv') {
      ctx.addIssue({ code: 'custom', path: ['verify'], message: 'verify=true is only available with format=json' });
    }
  });
export type AuditQuery = z.output<typeof auditQuerySchema>;

/** The selection of a bulk export: the filters of GET /v1/audit, without paging. */
export const auditExportCreateSchema = z.strictObject(filterShape).superRefine(toNotBeforeFrom).meta({ id: 'AuditExportInput' });

/** A selection of the chain, as stored with an export and handed to the queries. */
export interface AuditFilters {
  from?: Date;
  to?: Date;
  type?: string;
  action?: string;
  agent?: string;
}

export const auditEventViewSchema = z
  .object({
    seq: z.number().int(),
    prevHash: z.string(),
    hash: z.string(),
    type: z.enum(AUDIT_EVENT_TYPES),
    actor: z.string().meta({ description: 'The JSON-encoded actor object, as hashed.' }),
    data: z.record(z.string(), z.unknown()),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'AuditEvent' });
export type AuditEventView = z.output<typeof auditEventViewSchema>;

export const verificationSchema = z
  .object({
    intact: z.boolean(),
    count: z.number().int().meta({ description: 'Events checked: the whole chain, seq 1 to the head.' }),
    headHash: z.string().nullable().meta({ description: 'Hash of the head event; null for an empty chain.' }),
    brokenAtSeq: z.number().int().nullable().meta({
      description: 'First bad or missing seq, or the seq of the first signed checkpoint the chain contradicts; null when intact.',
    }),
    checkpoints: z.number().int().meta({ description: 'Signed checkpoints checked against the chain (see docs/audit.md).' }),
  })
  .meta({ id: 'AuditVerification' });
export type Verification = z.output<typeof verificationSchema>;

export const auditPageSchema = z
  .object({
    events: z.array(auditEventViewSchema),
    verification: verificationSchema.optional(),
    checkpoints: z.array(z.lazy(() => checkpointSchema)).optional(),
  })
  .meta({ id: 'AuditPage' });

export const auditExportViewSchema = z
  .object({
    id: z.uuid(),
    status: z.enum(['queued', 'running', 'completed', 'failed', 'expired']),
    filters: z.record(z.string(), z.string()),
    rowCount: z.number().int().meta({ description: 'Rows written so far; the final count once completed.' }),
    createdAt: z.iso.datetime(),
    completedAt: z.iso.datetime().nullable(),
    downloadPath: z.string().nullable().meta({ description: 'Where the CSV streams from, once completed.' }),
  })
  .meta({ id: 'AuditExport' });
export type AuditExportView = z.output<typeof auditExportViewSchema>;

export const auditExportParamsSchema = z.object({ id: z.uuid() });

export const checkpointSchema = z
  .object({
    orgId: z.uuid(),
    seq: z.number().int(),
    hash: z.string(),
    createdAt: z.iso.datetime(),
    keyId: z.string(),
    signature: z
      .string()
      .meta({ description: 'Base64 Ed25519 signature over the RFC 8785 bytes of { orgId, seq, hash, createdAt, keyId }.' }),
    treeSize: z.number().int().meta({ description: 'The size of the Merkle tree it states: `seq`.' }),
    rootHash: z
      .string()
      .nullable()
      .meta({ description: 'Hex RFC 6962 root of the tree of the first `seq` events; null on checkpoints signed before the tree.' }),
    note: z
      .string()
      .nullable()
      .meta({ description: 'The tree as a C2SP tlog-checkpoint signed note (see docs/receipts.md); null likewise.' }),
  })
  .meta({ id: 'AuditCheckpoint' });

const proofSize = (name: string) => queryInteger(name, 1, Number.MAX_SAFE_INTEGER);

export const inclusionProofQuerySchema = z.strictObject({
  seq: proofSize('seq').meta({ description: 'The audit event to prove.' }),
  treeSize: proofSize('treeSize').meta({ description: "The tree it is proven in: a checkpoint's treeSize." }),
});

export const inclusionProofSchema = z
  .object({
    leafIndex: z.number().int().meta({ description: '`seq` - 1.' }),
    treeSize: z.number().int(),
    hashes: z.array(z.string()).meta({ description: 'The RFC 6962 audit path, hex, from the leaf up.' }),
  })
  .meta({ id: 'InclusionProof' });

export const consistencyProofQuerySchema = z.strictObject({
  from: proofSize('from').meta({ description: 'The older tree size.' }),
  to: proofSize('to').meta({ description: 'The newer tree size.' }),
});

export const consistencyProofSchema = z
  .object({ hashes: z.array(z.string()).meta({ description: 'The RFC 6962 consistency proof, hex.' }) })
  .meta({ id: 'ConsistencyProof' });

export const checkpointListQuerySchema = z.strictObject({
  after: queryInteger('after', 0, Number.MAX_SAFE_INTEGER).default(0).meta({ description: 'Only checkpoints with a greater seq.' }),
  limit: queryInteger('limit', 1, 1000).default(100).meta({ description: 'Page size, 1-1000.' }),
});

export const checkpointListSchema = z.object({ checkpoints: z.array(checkpointSchema) }).meta({ id: 'AuditCheckpointList' });

export const signingKeyListSchema = z
  .object({
    keys: z.array(
      z.object({
        keyId: z.string(),
        publicKey: z.string().meta({ description: 'SPKI PEM.' }),
        createdAt: z.iso.datetime(),
        retiredAt: z.iso.datetime().nullable().meta({ description: 'Checkpoints it signed after this time are not valid.' }),
      }),
    ),
  })
  .meta({ id: 'AuditSigningKeys' });
