import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ApiError, type ApprovalView } from '@approval-gate/client';

/**
 * What an agent needs of an approval to act on it. `payload` is what to execute: set only when
 * approved, and the reviewer's edited version when they edited it. `edited` compares it with what
 * the revision under review submitted (its hash is in `revisions`), so any read can tell.
 */
export function outcomeOf(approval: ApprovalView) {
  const approved = approval.status === 'approved';
  const submitted = approval.revisions.find((revision) => revision.revision === approval.revision)?.payloadHash;
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
    edited: approved && submitted !== undefined && approval.payloadHash !== submitted,
    decidedBy: approval.decidedBy,
    action: approval.action,
    policyKey: approval.policyKey,
    expiresAt: approval.expiresAt,
    ...(approval.escalatedFrom ? { escalatedFrom: approval.escalatedFrom } : {}),
    ...(approval.escalatedTo ? { escalatedTo: approval.escalatedTo } : {}),
  };
}

type Outcome = ReturnType<typeof outcomeOf>;

/** One line for the model: what it may do now. `maxWaitSeconds` is what get_approval accepts. */
function instructionFor(outcome: Outcome, maxWaitSeconds: number): string {
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
      return `Still pending (a human decides; this can take minutes): do not execute the action yet. Call get_approval with approvalId and waitSeconds (up to ${maxWaitSeconds}) to wait for the decision, as many times as needed.`;
  }
}

/** The tool result for an approval: its outcome and instruction, as text and as structured content. */
export function answer(approval: ApprovalView, maxWaitSeconds: number): CallToolResult {
  const outcome = outcomeOf(approval);
  const result = { ...outcome, instruction: instructionFor(outcome, maxWaitSeconds) };
  return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }], structuredContent: result };
}

/** A refusal or failure as a tool error the model can read and act on, not a protocol error. */
export function errorAnswer(error: unknown): CallToolResult {
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
