import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ApiError, MAX_WAIT_PER_READ_SECONDS, type ApprovalGateClient, type ApprovalView } from '@approval-gate/client';
import {
  APPROVAL_STATUSES,
  approvalCreateSchema,
  approvalIdParamsSchema,
  approvalListQuerySchema,
  revisionInputSchema,
} from '@approval-gate/client/schemas';

/** The longest a `request_approval` call may wait for a decision, in seconds. */
export const MAX_REQUEST_WAIT_SECONDS = 3600;

/**
 * `jsonObject` (what the API checks a payload with) keeps its checks in a custom zod type, which
 * has no JSON Schema, and the SDK lists tools with zod's converter, which refuses such types. The
 * tools take a plain JSON object here, passed on as received, and the API checks it in full.
 */
const jsonObjectArgument = (label: string, description: string) =>
  z
    .unknown()
    .refine((value) => typeof value === 'object' && value !== null && !Array.isArray(value), `${label} must be a JSON object`)
    .meta({ type: 'object', additionalProperties: {}, description });

const requestApprovalInput = approvalCreateSchema.extend({
  payload: jsonObjectArgument(
    'payload',
    'The parameters of the action, as a JSON object: the policy evaluates them and a reviewer may edit them.',
  ),
  context: jsonObjectArgument('context', 'Why the action is needed, for the reviewer (not evaluated by the policy).').nullish(),
  waitSeconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_REQUEST_WAIT_SECONDS)
    .default(300)
    .meta({ description: `Seconds to wait for a decision (0 to ${MAX_REQUEST_WAIT_SECONDS}, default 300).` }),
});

const getApprovalInput = z.object({
  approvalId: approvalIdParamsSchema.shape.id,
  waitSeconds: z
    .number()
    .int()
    .min(1)
    .max(MAX_WAIT_PER_READ_SECONDS)
    .optional()
    .meta({ description: `Seconds (1 to ${MAX_WAIT_PER_READ_SECONDS}) to wait while it is pending; without it, answers at once.` }),
});

const reviseApprovalInput = z.object({
  approvalId: approvalIdParamsSchema.shape.id,
  payload: jsonObjectArgument('payload', 'The revised parameters of the action, as a JSON object: changed as the reviewer asked.'),
  note: revisionInputSchema.shape.note.meta({ description: 'What you changed and why, for the reviewer (up to 2,000 characters).' }),
  waitSeconds: requestApprovalInput.shape.waitSeconds,
});

const query = approvalListQuerySchema.shape;
const listApprovalsInput = z.object({
  status: z.array(z.enum(APPROVAL_STATUSES)).min(1).optional().meta({ description: 'Only approvals in one of these statuses.' }),
  action: query.action,
  agent: query.agent,
  policyKey: query.policyKey,
  from: z.iso.datetime({ offset: true }).optional().meta({ description: 'Created at or after (ISO 8601).' }),
  to: z.iso.datetime({ offset: true }).optional().meta({ description: 'Created at or before (ISO 8601).' }),
  limit: z.number().int().min(1).max(200).optional().meta({ description: 'Approvals per page (1 to 200, default 50).' }),
  cursor: query.cursor,
});

/**
 * What an agent needs of an approval to act on it. `payload` is what to execute: set only when
 * approved, and the reviewer's edited version when they edited it. `edited` says so when the hash
 * of the payload that was asked for is known (null when it is not: reads by id).
 */
function outcomeOf(approval: ApprovalView, askedPayloadHash: string | null = null) {
  const approved = approval.status === 'approved';
  const edited = askedPayloadHash === null ? null : approved && approval.payloadHash !== askedPayloadHash;
  return {
    approvalId: approval.id,
    status: approval.status,
    settled: approval.status !== 'pending',
    verdict: approved || approval.status === 'rejected' ? approval.status : null,
    feedback: approval.feedback,
    ...(approval.status === 'changes_requested'
      ? { suggestedPayload: approval.suggestedPayload ?? null, revision: approval.revision }
      : {}),
    payload: approved ? approval.payload : null,
    edited,
    decidedBy: approval.decidedBy,
    action: approval.action,
    policyKey: approval.policyKey,
    expiresAt: approval.expiresAt,
    ...(approval.escalatedFrom ? { escalatedFrom: approval.escalatedFrom } : {}),
    ...(approval.escalatedTo ? { escalatedTo: approval.escalatedTo } : {}),
  };
}

/** One line for the model: what it may do now. */
function instructionFor(outcome: ReturnType<typeof outcomeOf>, waitedSeconds?: number): string {
  switch (outcome.status) {
    case 'approved':
      return outcome.edited
        ? 'Approved with changes: execute the action with `payload` as given here (the reviewer edited it), not with the original.'
        : 'Approved: execute the action with `payload`.';
    case 'rejected':
      return `Rejected: do not execute the action.${outcome.feedback ? ` The reviewer said: ${outcome.feedback}` : ''}`;
    case 'changes_requested':
      return `Changes requested: do not execute the action. The reviewer said: ${outcome.feedback}${outcome.suggestedPayload ? ' (`suggestedPayload` is the payload they would accept)' : ''}. Revise the payload as asked and call revise_approval with approvalId, the revised payload and a note on what you changed; or, if you cannot, do not execute the action.`;
    case 'expired':
      return 'Expired without a decision: do not execute the action.';
    case 'escalated':
      return 'Escalated with no one to escalate to: do not execute the action.';
    case 'pending':
      return `${waitedSeconds === undefined ? 'Still pending' : `No decision within ${waitedSeconds} s; still pending`}: do not execute the action yet. Call get_approval with approvalId (waitSeconds up to ${MAX_WAIT_PER_READ_SECONDS}) to learn the decision.`;
  }
}

function answer(outcome: ReturnType<typeof outcomeOf>, waitedSeconds?: number): CallToolResult {
  const result = { ...outcome, instruction: instructionFor(outcome, waitedSeconds) };
  return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }], structuredContent: result };
}

/** A refusal or failure as a tool error the model can read and act on, not a protocol error. */
function errorAnswer(error: unknown): CallToolResult {
  if (error instanceof ApiError) {
    const fields = error.errors.map((field) => `\n- ${field.path}: ${field.message}`).join('');
    return {
      isError: true,
      content: [{ type: 'text', text: `Approval Gate answered ${error.status} (${error.code}): ${error.detail}${fields}` }],
      structuredContent: { error: error.problem },
    };
  }
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  const message = error instanceof Error ? `${error.message}${cause}` : String(error);
  return { isError: true, content: [{ type: 'text', text: `Approval Gate could not be reached: ${message}` }] };
}

async function answering(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    return errorAnswer(error);
  }
}

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * Each long read of a wait is reported as progress (clients that reset their timeout on progress
 * keep waiting); the hash of the payload first waited on is kept, to tell an edited approval.
 */
function reportingProgress(extra: ToolExtra) {
  const progressToken = extra._meta?.progressToken;
  let reads = 0;
  const state = {
    askedPayloadHash: null as string | null,
    onWait: (pending: ApprovalView) => {
      state.askedPayloadHash ??= pending.payloadHash;
      reads += 1;
      if (progressToken !== undefined) {
        void extra
          .sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: reads, message: `Waiting for a decision on ${pending.id}` },
          })
          .catch(() => {});
      }
    },
  };
  return state;
}

/** An MCP server whose tools ask Approval Gate, through `client`, before an agent acts. */
export function createApprovalGateMcpServer(client: ApprovalGateClient, version: string): McpServer {
  const server = new McpServer({ name: 'approval-gate', version });

  server.registerTool(
    'request_approval',
    {
      title: 'Request approval',
      description:
        'Ask before acting: creates an approval request for an action and waits until a policy or a human decides it, or waitSeconds pass. ' +
        'Execute the action only when status is "approved", and then with the returned payload (a reviewer may have edited it). ' +
        'A rejection carries the reviewer’s feedback. A reviewer may instead ask for changes (status "changes_requested", with feedback and ' +
        'perhaps a suggestedPayload): then revise the payload and call revise_approval. If the answer is still pending, call get_approval later with approvalId.',
      inputSchema: requestApprovalInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    ({ waitSeconds, ...input }, extra) =>
      answering(async () => {
        const progress = reportingProgress(extra);
        const approval = await client.requestApproval(input as z.input<typeof approvalCreateSchema>, {
          wait: waitSeconds,
          signal: extra.signal,
          onWait: progress.onWait,
        });
        return answer(outcomeOf(approval, progress.askedPayloadHash ?? approval.payloadHash), waitSeconds);
      }),
  );

  server.registerTool(
    'revise_approval',
    {
      title: 'Revise approval',
      description:
        'Answers a request for changes: sends the revised payload for the same approval request, which goes to the reviewers again ' +
        '(or is decided at once by the policy), and waits like request_approval. Only for a request whose status is "changes_requested". ' +
        'Execute the action only when status is "approved", and then with the returned payload.',
      inputSchema: reviseApprovalInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    ({ approvalId, payload, note, waitSeconds }, extra) =>
      answering(async () => {
        const progress = reportingProgress(extra);
        const revised = await client.revise(approvalId, {
          payload: payload as Record<string, unknown>,
          ...(note ? { note } : {}),
          signal: extra.signal,
        });
        const approval = await client.waitForDecision(revised, { wait: waitSeconds, signal: extra.signal, onWait: progress.onWait });
        return answer(outcomeOf(approval, revised.payloadHash), waitSeconds);
      }),
  );

  server.registerTool(
    'get_approval',
    {
      title: 'Get approval',
      description: 'Reads an approval request by id: its status, verdict, feedback and, when approved, the payload to execute.',
      inputSchema: getApprovalInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ approvalId, waitSeconds }, extra) =>
      answering(async () => answer(outcomeOf(await client.getApproval(approvalId, { wait: waitSeconds, signal: extra.signal })))),
  );

  server.registerTool(
    'list_approvals',
    {
      title: 'List approvals',
      description:
        'Lists approval requests, newest first, filtered by status, action, agent, policy or creation time; pass nextCursor as cursor for the next page.',
      inputSchema: listApprovalsInput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ status, ...filters }) =>
      answering(async () => {
        const page = await client.listApprovals({
          ...filters,
          status: status?.join(','),
          limit: filters.limit === undefined ? undefined : String(filters.limit),
        });
        const result = { approvals: page.approvals.map((approval) => outcomeOf(approval)), nextCursor: page.nextCursor };
        return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }], structuredContent: result };
      }),
  );

  return server;
}
