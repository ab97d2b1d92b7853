import { formatCount } from '../../lib/display-count.js';
import { REPLAY_LIMIT, type ApprovalFeed, type FeedMessage } from '../../modules/approvals/approval-feed.js';
import { voterOf, type ApprovalService } from '../../modules/approvals/approval-service.js';
import {
  approvalCreateSchema,
  approvalIdParamsSchema,
  approvalListQuerySchema,
  approvalListSchema,
  approvalReadQuerySchema,
  approvalViewSchema,
  decisionSchema,
  revisionInputSchema,
  signedReceiptSchema,
} from '../../modules/approvals/approval-schemas.js';
import { STREAMS_PER_PRINCIPAL } from '../../modules/approvals/feed-stream-slots.js';
import { defineRoute, type ServerSentEvent } from '../route.js';
import { problemResponses } from './problem-responses.js';

/** A Last-Event-ID that is not a seq this stream gave out is ignored: the stream starts from now. */
function resumeAfter(lastEventId: string | undefined): number | null {
  return lastEventId !== undefined && /^\d{1,15}$/.test(lastEventId) ? Number(lastEventId) : null;
}

async function* serverSentEvents(messages: AsyncIterable<FeedMessage>): AsyncGenerator<ServerSentEvent> {
  for await (const message of messages) {
    yield message.kind === 'reset'
      ? { event: 'reset', data: { reason: 'More was missed than can be replayed: read the approvals again.' } }
      : { id: String(message.event.seq), event: 'approval', data: message.event };
  }
}

export function approvalRoutes(approvals: ApprovalService, feed: ApprovalFeed) {
  return [
    defineRoute({
      method: 'post',
      path: '/v1/approvals',
      summary: 'Create an approval request; the policy is evaluated at once',
      scope: 'approvals:write',
      body: approvalCreateSchema,
      // The body is not validated yet: only a well-formed idempotency key may reach the database.
      precheck: (tenant, rawBody) =>
        approvals.assertCreationAllowed(
          tenant,
          approvalCreateSchema.shape.idempotencyKey.safeParse((rawBody as { idempotencyKey?: unknown } | undefined)?.idempotencyKey).data,
        ),
      responses: {
        200: { description: 'The policy allowed the action: approved at once.', schema: approvalViewSchema },
        201: { description: 'Pending for a human, or an idempotent replay.', schema: approvalViewSchema },
        ...problemResponses(401, 402, 403, 422),
      },
      handler: async ({ tenant, body }) => {
        const { created, approval } = await approvals.create(tenant, body);
        return { status: created && approval.status === 'approved' ? 200 : 201, body: approval };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/approvals',
      summary: 'List approvals, newest first, with filters and cursor paging',
      scope: 'approvals:read',
      query: approvalListQuerySchema,
      responses: {
        200: { description: 'A page of approvals; `nextCursor` is null on the last page.', schema: approvalListSchema },
        ...problemResponses(401, 403, 422),
      },
      handler: async ({ tenant, query }) => ({ status: 200, body: await approvals.list(tenant, query) }),
    }),
    // Before /v1/approvals/:id, whose id it would otherwise be.
    defineRoute({
      method: 'get',
      path: '/v1/approvals/events',
      summary: "Follow the organization's approval events live (server-sent events)",
      scope: 'approvals:read',
      responses: {
        200: {
          description: `A text/event-stream: \`approval\` events (\`{ type, approvalId, status, seq }\`, id = seq); reconnecting with Last-Event-ID replays what was missed, or sends \`reset\` when it is older than the last ${formatCount(REPLAY_LIMIT)} events. At most ${STREAMS_PER_PRINCIPAL} streams per member or service key (429 beyond).`,
          text: {
            mediaType: 'text/event-stream',
            example:
              'retry: 2000\n\nid: 42\nevent: approval\ndata: {"type":"approval.approved","approvalId":"0b9f3c7e-5d1a-4e2b-8c6f-9a0d1e2f3a4b","status":"approved","seq":42}\n\n: ping\n\n',
          },
        },
        ...problemResponses(401, 403, 429),
      },
      handler: async ({ tenant, caller }) => {
        const release = await feed.streamSlots.take(tenant);
        // The response closes however the stream ends: the client leaves, the credential lapses, shutdown.
        caller.onGone(release);
        if (caller.gone) release();
        return {
          status: 200,
          eventStream: (lastEventId, signal) => serverSentEvents(feed.stream(tenant, resumeAfter(lastEventId), signal)),
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/approvals/:id',
      summary: 'Read an approval, optionally waiting while it is pending',
      scope: 'approvals:read',
      params: approvalIdParamsSchema,
      query: approvalReadQuerySchema,
      responses: {
        200: { description: 'The approval as it is now.', schema: approvalViewSchema },
        ...problemResponses(401, 403, 404, 422),
      },
      handler: async ({ tenant, params, query, caller }) => ({
        status: 200,
        body: await approvals.get(tenant, params.id, query.wait, caller),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/approvals/:id/receipt',
      summary: "The signed receipt of an approval's settlement, to check before executing",
      scope: 'approvals:read',
      params: approvalIdParamsSchema,
      responses: {
        200: { description: 'The receipt and its Ed25519 signature (see docs/receipts.md).', schema: signedReceiptSchema },
        ...problemResponses(401, 403, 404),
      },
      handler: async ({ tenant, params }) => ({ status: 200, body: await approvals.receipt(tenant, params.id) }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/approvals/:id/decision',
      summary: 'Approve, reject or request changes of a pending approval',
      scope: 'approvals:decide',
      params: approvalIdParamsSchema,
      body: decisionSchema,
      responses: {
        200: { description: 'The decided approval.', schema: approvalViewSchema },
        ...problemResponses(401, 403, 404, 409, 422),
      },
      handler: async ({ tenant, params, body }) => ({
        status: 200,
        body: await approvals.decide(tenant.orgId, params.id, body, voterOf(tenant)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/approvals/:id/revisions',
      summary: 'Revise an approval a reviewer asked to change: pending again, evaluated again',
      scope: 'approvals:write',
      params: approvalIdParamsSchema,
      body: revisionInputSchema,
      responses: {
        200: { description: 'The policy allowed the revised action: approved at once.', schema: approvalViewSchema },
        201: { description: 'The revision is pending for reviewers, or an idempotent replay.', schema: approvalViewSchema },
        ...problemResponses(401, 403, 404, 409, 422),
      },
      handler: async ({ tenant, params, body }) => {
        const { created, approval } = await approvals.revise(tenant, params.id, body);
        return { status: created && approval.status === 'approved' ? 200 : 201, body: approval };
      },
    }),
  ];
}
