/**
 * What the framework adapters (`./ai-sdk.ts`, `./openai-agents.ts`) share: a tool call turned into
 * an approval request, and what the model is told when it is not approved.
 */
import type { ApprovalCreateInput, ApprovalStatus, ApprovalView } from './approval-types.js';
import { ApiError } from './api-error.js';
import type { ApprovalGateClient } from './index.js';

export interface ToolApprovalOptions {
  gate: ApprovalGateClient;
  /** The policy that decides each call; or one per tool, from the tool's name. */
  policyKey: string | ((toolName: string) => string);
  /** Seconds to wait for a decision (default 300); a call still pending then is answered as pending. */
  wait?: number;
  /** Who asks, recorded as the approval's `agent`. */
  agentName?: string;
  /** Reviewer-facing context for a call, from the tool's name and input. */
  context?: (toolName: string, input: Record<string, unknown>) => Record<string, unknown> | undefined;
}

/** A tool call: its tool, its input (the payload a reviewer reads and may edit) and the model's id for it. */
export interface ToolCallToApprove {
  toolName: string;
  input: unknown;
  callId: string;
  signal?: AbortSignal;
}

/** Asks Approval Gate about one tool call: the action is the tool's name, the payload its input. */
export function askAboutToolCall(
  { gate, policyKey, wait, agentName, context }: ToolApprovalOptions,
  { toolName, input, callId, signal }: ToolCallToApprove,
): Promise<ApprovalView> {
  const payload = payloadOf(toolName, input);
  const request: ApprovalCreateInput = {
    action: toolName,
    payload,
    policyKey: typeof policyKey === 'function' ? policyKey(toolName) : policyKey,
    // The model's id for the call: asking again about the same call (a resumed run) finds the same request.
    idempotencyKey: `tool-call:${callId}`,
    ...(agentName !== undefined ? { agent: agentName } : {}),
  };
  const reviewerContext = context?.(toolName, payload);
  if (reviewerContext !== undefined) request.context = reviewerContext;
  return gate.requestApproval(request, { ...(wait !== undefined ? { wait } : {}), ...(signal ? { signal } : {}) });
}

/**
 * Answers a request for changes with a new call of the same tool (C16): the call's input becomes
 * the request's next revision, decided by the same reviewers. A request that can no longer be
 * revised (it expired, or was withdrawn, meanwhile: 409) is asked about anew.
 */
export async function reviseForToolCall(
  options: ToolApprovalOptions,
  awaitingChanges: ApprovalView,
  call: ToolCallToApprove,
): Promise<ApprovalView> {
  const { gate, wait, context } = options;
  const payload = payloadOf(call.toolName, call.input);
  const reviewerContext = context?.(call.toolName, payload);
  let revised: ApprovalView;
  try {
    revised = await gate.revise(awaitingChanges.id, {
      payload,
      idempotencyKey: `tool-call:${call.callId}`,
      ...(reviewerContext !== undefined ? { context: reviewerContext } : {}),
      ...(call.signal ? { signal: call.signal } : {}),
    });
  } catch (error) {
    if (error instanceof ApiError && error.status === 409) return askAboutToolCall(options, call);
    throw error;
  }
  return gate.waitForDecision(revised, { ...(wait !== undefined ? { wait } : {}), ...(call.signal ? { signal: call.signal } : {}) });
}

function payloadOf(toolName: string, input: unknown): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError(`The input of tool ${toolName} is not a JSON object, so it cannot be an approval's payload`);
  }
  return input as Record<string, unknown>;
}

/** What the model reads instead of the tool's result when the call was not approved. */
export interface ToolCallNotApproved {
  approved: false;
  approvalId: string;
  status: Exclude<ApprovalStatus, 'approved'>;
  /** The reviewer's words: why it was rejected, or what to change. */
  feedback: string | null;
  /** With `changes_requested`: the input the reviewer would approve, if they gave one. */
  suggestedPayload: Record<string, unknown> | null;
  instruction: string;
}

export function notApproved(approval: ApprovalView): ToolCallNotApproved {
  const status = approval.status as ToolCallNotApproved['status'];
  return {
    approved: false,
    approvalId: approval.id,
    status,
    feedback: approval.feedback,
    suggestedPayload: approval.suggestedPayload ?? null,
    instruction: instructionFor(status, approval.feedback),
  };
}

function instructionFor(status: ToolCallNotApproved['status'], feedback: string | null): string {
  const said = feedback ? ` The reviewer said: ${feedback}` : '';
  switch (status) {
    case 'rejected':
      return `Rejected: the action was not carried out.${said}`;
    case 'changes_requested':
      return `Changes requested: the action was not carried out.${said} Call the tool again with its input changed as asked (\`suggestedPayload\`, when given, is what the reviewer would approve): that call is the request's revision, decided by the same reviewers. Or tell the user why you cannot.`;
    case 'pending':
      return 'No decision yet: the action was not carried out. Tell the user it awaits approval.';
    case 'expired':
      return 'The request expired without a decision: the action was not carried out.';
    case 'escalated':
      return 'The request was escalated with no one to escalate to: the action was not carried out.';
  }
}
