/**
 * `@approval-gate/client/ai-sdk`: tools of the Vercel AI SDK (`ai`) that ask Approval Gate before
 * they run. A call of a wrapped tool becomes an approval request (the action is the tool's name,
 * the payload its input); approved, the tool runs with the approved payload, which a reviewer may
 * have edited; otherwise the model gets, as the tool's result, what the reviewer said. After a
 * request for changes, the tool's next call is that request's revision, not a new request.
 */
import type { InferToolInput, InferToolOutput, Tool, ToolExecutionOptions, ToolSet } from 'ai';
import type { ApprovalView } from './approval-types.js';
import { askAboutToolCall, notApproved, reviseForToolCall, type ToolApprovalOptions, type ToolCallNotApproved } from './tool-approvals.js';

export type { ToolApprovalOptions, ToolCallNotApproved } from './tool-approvals.js';

/** A tool as `withApprovalGate` returns it: its result may be the reviewer's refusal instead. */
export type GatedTool<T extends Tool> = Tool<InferToolInput<T>, InferToolOutput<T> | ToolCallNotApproved>;

/**
 * Each tool of `tools` asking Approval Gate before it runs. Tools without `execute` (answered by
 * the application) are returned as they are: there is nothing here to hold back.
 */
export function withApprovalGate<TOOLS extends ToolSet>(
  tools: TOOLS,
  options: ToolApprovalOptions,
): { [NAME in keyof TOOLS]: GatedTool<TOOLS[NAME]> } {
  // Per tool, the request its last call left awaiting changes: taken by the tool's next call.
  const awaitingChanges = new Map<string, ApprovalView>();
  const gated = Object.entries(tools).map(([toolName, tool]) => {
    const execute = tool.execute as ((input: unknown, execution: ToolExecutionOptions<unknown>) => unknown) | undefined;
    if (!execute) return [toolName, tool];
    return [
      toolName,
      {
        ...tool,
        execute: async (input: unknown, execution: ToolExecutionOptions<unknown>) => {
          const call = { toolName, input, callId: execution.toolCallId, signal: execution.abortSignal };
          const earlier = awaitingChanges.get(toolName);
          awaitingChanges.delete(toolName);
          const approval = earlier ? await reviseForToolCall(options, earlier, call) : await askAboutToolCall(options, call);
          if (approval.status === 'changes_requested') awaitingChanges.set(toolName, approval);
          if (approval.status !== 'approved') return notApproved(approval);
          return await execute(approval.payload, execution);
        },
      },
    ];
  });
  return Object.fromEntries(gated) as { [NAME in keyof TOOLS]: GatedTool<TOOLS[NAME]> };
}
