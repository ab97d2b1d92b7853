/**
 * `@approval-gate/client/openai-agents`: the OpenAI Agents SDK's tool approvals, decided in
 * Approval Gate. A tool with `needsApproval` stops the run with an interruption;
 * `resolveWithApprovalGate` asks Approval Gate about each (the action is the tool's name, the
 * payload its arguments), waits, approves or rejects it in the run's state with the reviewer's
 * feedback, and resumes the run, until it ends with no interruption left.
 */
import { RunState, Runner, type Agent, type RunResult, type RunToolApprovalItem } from '@openai/agents';
import type { ApprovalView } from './approval-types.js';
import { askAboutToolCall, notApproved, type ToolApprovalOptions } from './tool-approvals.js';

export type { ToolApprovalOptions, ToolCallNotApproved } from './tool-approvals.js';

export interface ResolveWithApprovalGateOptions<TAgent extends Agent<any, any>> extends ToolApprovalOptions {
  /** The run's starting agent, which resuming needs. */
  agent: TAgent;
  /** What resumes the run (its model provider, tracing); by default a new `Runner()`. */
  runner?: Runner;
  signal?: AbortSignal;
}

/**
 * Settles the interruptions of `result` in Approval Gate and resumes the run, as many times as it
 * is interrupted again. A call still pending when `wait` runs out stops it there: the result is
 * returned with that interruption, and calling this again with it waits for the same request.
 */
export async function resolveWithApprovalGate<TContext, TAgent extends Agent<any, any>>(
  result: RunResult<TContext, TAgent>,
  { agent, runner = new Runner(), signal, ...options }: ResolveWithApprovalGateOptions<TAgent>,
): Promise<RunResult<TContext, TAgent>> {
  while (result.interruptions.length > 0) {
    const decisions = await Promise.all(
      result.interruptions.map(async (item) => ({
        callId: callIdOf(item),
        approval: await askAboutToolCall(options, {
          toolName: item.name ?? item.rawItem.type,
          input: item.arguments === undefined ? { call: item.rawItem } : JSON.parse(item.arguments),
          callId: callIdOf(item),
          signal,
        }),
        asked: item.arguments,
      })),
    );
    if (decisions.some(({ approval }) => approval.status === 'pending')) return result;

    let state = result.state;
    // The SDK runs a call with the arguments the model gave; an edited payload is written into the saved state first.
    const edited = new Map(decisions.filter(isEdited).map(({ callId, approval }) => [callId, JSON.stringify(approval.payload)]));
    if (edited.size > 0) state = await RunState.fromString<TContext, TAgent>(agent, withArguments(state.toString(), edited));
    for (const item of state.getInterruptions()) {
      const { approval } = decisions.find(({ callId }) => callId === callIdOf(item))!;
      if (approval.status === 'approved') state.approve(item);
      else state.reject(item, { message: JSON.stringify(notApproved(approval)) });
    }
    result = await runner.run(agent, state, { signal });
  }
  return result;
}

function callIdOf(item: RunToolApprovalItem): string {
  const raw = item.rawItem as { callId?: string; id?: string };
  const callId = raw.callId ?? raw.id;
  if (!callId) throw new TypeError(`The call of ${item.name ?? item.rawItem.type} has no id to ask about`);
  return callId;
}

function isEdited({ approval, asked }: { approval: ApprovalView; asked: string | undefined }): boolean {
  if (approval.status !== 'approved' || asked === undefined) return false;
  return canonical(approval.payload) !== canonical(JSON.parse(asked));
}

/** JSON with its keys sorted: the service stores payloads as jsonb, which orders keys its own way. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonical(inner)}`).join(',')}}`;
}

/** A serialized run state whose function calls named in `argumentsByCallId` carry those arguments instead. */
function withArguments(serialized: string, argumentsByCallId: Map<string, string>): string {
  const replace = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(replace);
    if (typeof value !== 'object' || value === null) return value;
    const object = Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, replace(inner)]));
    const edited = object.type === 'function_call' ? argumentsByCallId.get(object.callId as string) : undefined;
    return edited === undefined ? object : { ...object, arguments: edited };
  };
  return JSON.stringify(replace(JSON.parse(serialized)));
}
