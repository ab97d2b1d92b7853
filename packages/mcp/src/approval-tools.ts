import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CreateTaskRequestHandlerExtra, TaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { CallToolResult, CreateTaskResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ApprovalGateClient, ApprovalView } from '@approval-gate/client';
import {
  APPROVAL_STATUSES,
  approvalCreateSchema,
  approvalIdParamsSchema,
  approvalListQuerySchema,
  revisionInputSchema,
} from '@approval-gate/client/schemas';
import { answer, errorAnswer, outcomeOf } from './approval-outcome.js';
import { ApprovalTaskStore, type TaskContext } from './approval-tasks.js';

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
  waitSeconds: z.number().int().min(0).max(MAX_REQUEST_WAIT_SECONDS),
});

const getApprovalInput = z.object({ approvalId: approvalIdParamsSchema.shape.id });

const reviseApprovalInput = z.object({
  approvalId: approvalIdParamsSchema.shape.id,
  payload: jsonObjectArgument('payload', 'The revised parameters of the action, as a JSON object: changed as the reviewer asked.'),
  note: revisionInputSchema.shape.note.meta({ description: 'What you changed and why, for the reviewer (up to 2,000 characters).' }),
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

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Progress once the request exists and before each long read: clients that reset their timeout on progress keep waiting. */
function reportingProgress(extra: ToolExtra): (pending: ApprovalView) => void {
  const progressToken = extra._meta?.progressToken;
  let reports = 0;
  return (pending) => {
    reports += 1;
    if (progressToken === undefined) return;
    void extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress: reports, message: `Waiting for a decision on ${pending.id}` },
      })
      .catch(() => {});
  };
}

async function answering(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    return errorAnswer(error);
  }
}

export interface ApprovalGateMcpOptions {
  /** The longest one tool call waits before it answers (pending, with how to go on), in seconds. */
  callSeconds: number;
  /** What tasks/get advises between polls of a task, in milliseconds. */
  taskPollIntervalMs: number;
}

/**
 * An MCP server whose tools ask Approval Gate, through `client`, before an agent acts.
 * request_approval and revise_approval are task tools (taskSupport `optional`): a client that asks
 * for a task gets one at once, which ends when a decision is made (see approval-tasks.ts); any
 * other call waits at most `callSeconds` and answers the request as it is then, pending or decided.
 */
export function createApprovalGateMcpServer(
  client: ApprovalGateClient,
  version: string,
  { callSeconds, taskPollIntervalMs }: ApprovalGateMcpOptions,
): McpServer {
  const tasks = new ApprovalTaskStore({ client, pollIntervalMs: taskPollIntervalMs, maxWaitSeconds: callSeconds });
  const server = new McpServer(
    { name: 'approval-gate', version },
    { capabilities: { tasks: { cancel: {}, requests: { tools: { call: {} } } } }, taskStore: tasks },
  );
  server.server.onclose = () => tasks.close();

  /**
   * Goes on from an approval just created or revised: as a task the client polls, or, when the
   * client asked for none, by waiting here (at most `callSeconds`) and answering through the task
   * the SDK then reads back.
   */
  async function continueWith(
    approval: ApprovalView | Error,
    { waitSeconds, startedAt }: { waitSeconds: number; startedAt: number },
    extra: CreateTaskRequestHandlerExtra,
  ): Promise<CreateTaskResult> {
    if (approval instanceof Error)
      return { task: await extra.taskStore.createTask({ context: { failure: errorAnswer(approval) } satisfies TaskContext }) };
    const task = await extra.taskStore.createTask({ pollInterval: taskPollIntervalMs, context: { approval } satisfies TaskContext });
    const onWait = reportingProgress(extra);
    // Told at once, so a host learns the request exists (and resets its timeout) before any wait.
    onWait(approval);
    if (!tasks.isInline(task)) {
      tasks.watch(task, approval, extra, onWait);
      return { task };
    }
    // The call's time counts from its start: creating the request may have taken retries.
    const wait = Math.max(0, Math.min(waitSeconds, callSeconds) - (Date.now() - startedAt) / 1000);
    // A failure while waiting is answered by tasks/result, which reads the approval again.
    await client.waitForDecision(approval, { wait, signal: extra.signal, onWait }).catch((error: unknown) => {
      if (extra.signal.aborted) throw error;
    });
    return { task: { ...task, status: 'completed' } };
  }

  /** A task tool whose `start` creates or revises the approval its task then waits on. */
  function taskTool<Args extends { waitSeconds: number }>(
    start: (args: Args, extra: CreateTaskRequestHandlerExtra) => Promise<ApprovalView>,
  ) {
    return {
      createTask: async (args: unknown, extra: CreateTaskRequestHandlerExtra) => {
        const startedAt = Date.now();
        const started = await start(args as Args, extra).catch((error: unknown) =>
          error instanceof Error ? error : new Error(String(error)),
        );
        return continueWith(started, { waitSeconds: (args as Args).waitSeconds, startedAt }, extra);
      },
      getTask: async (_args: unknown, extra: TaskRequestHandlerExtra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args: unknown, extra: TaskRequestHandlerExtra) =>
        (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
    };
  }

  const waitSeconds = requestApprovalInput.shape.waitSeconds.default(callSeconds).meta({
    description:
      `Seconds to wait for a decision in this call: at most ${callSeconds} (a longer wait is cut to that); then the answer is "pending" ` +
      'and get_approval waits on. A client that runs this tool as a task gets the task at once, and the task ends with the decision.',
  });

  const requestInput = requestApprovalInput.extend({ waitSeconds });
  server.experimental.tasks.registerToolTask(
    'request_approval',
    {
      title: 'Request approval',
      description:
        'Ask before acting: creates an approval request for an action and waits until a policy or a human decides it, or waitSeconds pass. ' +
        'Execute the action only when status is "approved", and then with the returned payload (a reviewer may have edited it). ' +
        'A rejection carries the reviewer’s feedback. A reviewer may instead ask for changes (status "changes_requested", with feedback and ' +
        'perhaps a suggestedPayload): then revise the payload and call revise_approval. If the answer is still pending, call get_approval with ' +
        'approvalId and waitSeconds, as often as needed.',
      inputSchema: requestInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      execution: { taskSupport: 'optional' },
    },
    taskTool<z.output<typeof requestInput>>(({ waitSeconds: _wait, ...input }, extra) =>
      client.requestApproval(input as z.input<typeof approvalCreateSchema>, { wait: 0, signal: extra.signal }),
    ),
  );

  const reviseInput = reviseApprovalInput.extend({ waitSeconds });
  server.experimental.tasks.registerToolTask(
    'revise_approval',
    {
      title: 'Revise approval',
      description:
        'Answers a request for changes: sends the revised payload for the same approval request, which goes to the reviewers again ' +
        '(or is decided at once by the policy), and waits like request_approval. Only for a request whose status is "changes_requested". ' +
        'Execute the action only when status is "approved", and then with the returned payload.',
      inputSchema: reviseInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      execution: { taskSupport: 'optional' },
    },
    taskTool<z.output<typeof reviseInput>>(({ approvalId, payload, note }, extra) =>
      client.revise(approvalId, { payload: payload as Record<string, unknown>, ...(note ? { note } : {}), signal: extra.signal }),
    ),
  );

  server.registerTool(
    'get_approval',
    {
      title: 'Get approval',
      description:
        'Reads an approval request by id: its status, verdict, feedback and, when approved, the payload to execute. With waitSeconds, ' +
        'waits that long at most for a pending request to be decided (following an escalation to its successor).',
      inputSchema: getApprovalInput.extend({
        waitSeconds: z
          .number()
          .int()
          .min(1)
          .max(callSeconds)
          .optional()
          .meta({ description: `Seconds (1 to ${callSeconds}) to wait while it is pending; without it, answers at once.` }),
      }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ approvalId, waitSeconds: wait }, extra) =>
      answering(async () => {
        const approval = await client.getApproval(approvalId, { signal: extra.signal });
        const decided = await client.waitForDecision(approval, { wait: wait ?? 0, signal: extra.signal, onWait: reportingProgress(extra) });
        return answer(decided, callSeconds);
      }),
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
