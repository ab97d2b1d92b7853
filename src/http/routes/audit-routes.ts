import { toCsv, toEventView, type AuditService } from '../../modules/audit/audit-service.js';
import type { AuditTree } from '../../modules/audit/audit-tree.js';
import type { CheckpointService } from '../../modules/audit/checkpoint-service.js';
import {
  checkpointListQuerySchema,
  checkpointListSchema,
  consistencyProofQuerySchema,
  consistencyProofSchema,
  inclusionProofQuerySchema,
  inclusionProofSchema,
  signingKeyListSchema,
  auditExportCreateSchema,
  auditExportParamsSchema,
  auditExportViewSchema,
  auditPageSchema,
  auditQuerySchema,
} from '../../modules/audit/audit-schemas.js';
import { problemSchema } from '../problem-schema.js';
import { defineRoute } from '../route.js';
import { problemResponses } from './problem-responses.js';

const AUDIT_PLANS = ['pro', 'enterprise'] as const;

const CSV_EXAMPLE = {
  mediaType: 'text/csv',
  example: [
    'seq,createdAt,type,actor,data,prevHash,hash',
    '1,2026-01-05T09:30:00.000Z,policy.updated,"{""type"":""api_key"",""id"":""7d1c0b52-6f0e-4a51-9d7e-2b8c51a0f3e4""}","{""policy"":{""defaultOutcome"":""review""},""policyKey"":""refunds""}",' +
      `${'0'.repeat(64)},4f1a0c3e9b7d2a68c5e1f0b3d9a7c6e5b4a3f2e1d0c9b8a7f6e5d4c3b2a19087`,
    '',
  ].join('\n'),
} as const;

export function auditRoutes(audit: AuditService, checkpoints: CheckpointService, tree: AuditTree) {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/audit/proofs/inclusion',
      summary: 'Prove an audit event is in the Merkle tree of a checkpoint (RFC 6962)',
      scope: 'audit:read',
      query: inclusionProofQuerySchema,
      responses: {
        200: { description: 'The audit path of the event in the tree of the first `treeSize` events.', schema: inclusionProofSchema },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, query }) => ({ status: 200, body: await tree.inclusion(tenant.orgId, query.seq, query.treeSize) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/audit/proofs/consistency',
      summary: 'Prove the tree of one checkpoint is a prefix of a later one (RFC 6962)',
      scope: 'audit:read',
      query: consistencyProofQuerySchema,
      responses: {
        200: { description: 'The consistency proof from the first `from` events to the first `to`.', schema: consistencyProofSchema },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, query }) => ({ status: 200, body: await tree.consistency(tenant.orgId, query.from, query.to) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/audit/keys',
      summary: 'The public keys that sign audit checkpoints, current and retired',
      auth: 'public',
      responses: { 200: { description: 'Every signing key, oldest first.', schema: signingKeyListSchema } },
      handler: async () => ({ status: 200, body: { keys: await checkpoints.keys() } }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/audit/checkpoints',
      summary: "The organization's signed checkpoints of its audit chain, by seq",
      scope: 'audit:read',
      query: checkpointListQuerySchema,
      responses: {
        200: { description: 'A page of checkpoints after `after`.', schema: checkpointListSchema },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, query }) => ({
        status: 200,
        body: { checkpoints: await checkpoints.list(tenant.orgId, query.after, query.limit) },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/audit',
      summary: "Page through the organization's audit chain in seq order, as JSON or CSV, optionally verifying the whole chain",
      scope: 'audit:read',
      plans: AUDIT_PLANS,
      query: auditQuerySchema,
      responses: {
        200: {
          description:
            'JSON: the events and, with verify=true, the verification of the whole chain. With format=csv: text/csv with the header seq,createdAt,type,actor,data,prevHash,hash.',
          schema: auditPageSchema,
          text: CSV_EXAMPLE,
        },
        ...problemResponses(401, 402, 403, 422),
      },
      handler: async ({ tenant, query }) => {
        const page = await audit.page(tenant, query);
        if (query.format === 'csv') return { status: 200, csv: toCsv(page.events, page.checkpoints) };
        return { status: 200, body: { ...page, events: page.events.map(toEventView) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/audit/exports',
      summary: 'Start a bulk CSV export of the chain (or of a selection); a worker writes it',
      scope: 'audit:read',
      plans: AUDIT_PLANS,
      body: auditExportCreateSchema,
      responses: {
        202: { description: 'The export, queued.', schema: auditExportViewSchema },
        ...problemResponses(401, 402, 403, 422),
      },
      handler: async ({ tenant, body }) => ({ status: 202, body: await audit.createExport(tenant, body) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/audit/exports/:id',
      summary: 'Status and progress of a bulk export',
      scope: 'audit:read',
      plans: AUDIT_PLANS,
      params: auditExportParamsSchema,
      responses: {
        200: { description: 'The export; downloadPath is set once it is completed.', schema: auditExportViewSchema },
        ...problemResponses(401, 402, 403, 404),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await audit.getExport(tenant, params.id) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/audit/exports/:id/download',
      summary: 'Download a completed bulk export as CSV (streamed)',
      scope: 'audit:read',
      plans: AUDIT_PLANS,
      params: auditExportParamsSchema,
      responses: {
        200: { description: 'text/csv with the header seq,createdAt,type,actor,data,prevHash,hash.', text: CSV_EXAMPLE },
        409: { description: 'The export is not completed (yet).', schema: problemSchema },
        ...problemResponses(401, 402, 403, 404),
      },
      handler: async ({ tenant, params }) => {
        const file = await audit.download(tenant, params.id);
        const headers = { 'content-length': String(file.size), 'content-disposition': `attachment; filename="${file.filename}"` };
        return { status: 200, csv: file.read, headers };
      },
    }),
  ];
}
