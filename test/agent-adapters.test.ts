import { Agent, Runner, tool as agentsTool } from '@openai/agents';
import { generateText, isStepCount, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { withApprovalGate } from '../src/client/ai-sdk.js';
import { ApiError, createApprovalGateClient, type ApprovalView, type DecisionInput } from '../src/client/index.js';
import { resolveWithApprovalGate } from '../src/client/openai-agents.js';
import { eventually } from './support/eventually.js';
import { modelUsage, ScriptedAgentsModel, scriptedAiModel } from './support/scripted-models.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;

useTestEnv((created) => ({ env, org } = created));

const gate = () => createApprovalGateClient({ baseUrl: env.baseUrl, apiKey: org.key });
const reviewer = () => createApprovalGateClient({ baseUrl: env.baseUrl, apiKey: org.reviewerKey });

/** Decides, as a reviewer, each pending request of `action` once there are `count` of them, in the order given. */
async function decidePending(action: string, decisions: DecisionInput[]): Promise<ApprovalView[]> {
  const pending = await eventually(async () => {
    const { approvals } = await reviewer().listApprovals({ action, status: 'pending' });
    return approvals.length === decisions.length ? approvals : undefined;
  });
  const byAmount = pending.toSorted((a, b) => Number(a.payload.amount) - Number(b.payload.amount));
  return Promise.all(byAmount.map((approval, index) => reviewer().decide(approval.id, decisions[index]!)));
}

describe('the AI SDK adapter (withApprovalGate)', () => {
  it('runs the approved payload, the edited one, and gives the model the reviewer’s feedback on a rejection or a request for changes', async () => {
    await org.request('put', '/v1/policies/ai-refunds').send({}).expect(200);
    const executed: unknown[] = [];
    const tools = withApprovalGate(
      {
        aiRefund: tool({
          description: 'Refund an order',
          inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
          execute: async (input) => {
            executed.push(input);
            return { refunded: input.amount, orderId: input.orderId };
          },
        }),
      },
      { gate: gate(), policyKey: 'ai-refunds', wait: 20, agentName: 'ai-sdk-test' },
    );
    const model = scriptedAiModel([
      { toolName: 'aiRefund', input: { orderId: 'A-1', amount: 10 } },
      { toolName: 'aiRefund', input: { orderId: 'A-2', amount: 20 } },
      { toolName: 'aiRefund', input: { orderId: 'A-3', amount: 30 } },
    ]);
    const running = generateText({ model, prompt: 'Refund the three orders', tools, stopWhen: isStepCount(3) });
    const [, rejected] = await decidePending('aiRefund', [
      { verdict: 'approved', editedPayload: { orderId: 'A-1', amount: 5 } },
      { verdict: 'rejected', feedback: 'A-2 was already refunded.' },
      { verdict: 'changes_requested', feedback: 'At most 25 without a receipt.', suggestedPayload: { orderId: 'A-3', amount: 25 } },
    ]);
    const result = await running;

    expect(executed).toEqual([{ orderId: 'A-1', amount: 5 }]);
    // What the model read on its second step, and said back.
    const read = JSON.parse(result.text) as Record<string, unknown>[];
    expect(read).toEqual([
      { type: 'json', value: { refunded: 5, orderId: 'A-1' } },
      {
        type: 'json',
        value: expect.objectContaining({
          approved: false,
          approvalId: rejected!.id,
          status: 'rejected',
          feedback: 'A-2 was already refunded.',
        }),
      },
      {
        type: 'json',
        value: expect.objectContaining({
          status: 'changes_requested',
          feedback: 'At most 25 without a receipt.',
          suggestedPayload: { orderId: 'A-3', amount: 25 },
          instruction: expect.stringContaining('Call the tool again'),
        }),
      },
    ]);
    const [approved] = (await reviewer().listApprovals({ action: 'aiRefund', status: 'approved' })).approvals;
    expect(approved).toMatchObject({ agent: 'ai-sdk-test', policyKey: 'ai-refunds', payload: { orderId: 'A-1', amount: 5 } });
  });

  it('makes the tool’s next call after a request for changes that request’s revision, decided by the same reviewers', async () => {
    await org.request('put', '/v1/policies/ai-revisions').send({}).expect(200);
    const executed: unknown[] = [];
    const tools = withApprovalGate(
      {
        aiPayout: tool({
          inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
          execute: async (input) => {
            executed.push(input);
            return { paid: input.amount };
          },
        }),
      },
      { gate: gate(), policyKey: 'ai-revisions', wait: 20 },
    );
    // A model that does as the tool's result says: calls again with the suggested input.
    const model = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        const last = prompt.at(-1)!;
        const result = last.role === 'tool' && last.content[0]?.type === 'tool-result' ? last.content[0].output : null;
        const answer = result?.type === 'json' ? (result.value as { status?: string; suggestedPayload?: unknown }) : null;
        const input =
          last.role !== 'tool' ? { orderId: 'P-1', amount: 40 } : answer?.status === 'changes_requested' ? answer.suggestedPayload : null;
        const content = input
          ? [{ type: 'tool-call' as const, toolCallId: `call_${randomUUID()}`, toolName: 'aiPayout', input: JSON.stringify(input) }]
          : [{ type: 'text' as const, text: JSON.stringify(answer) }];
        return { content, finishReason: { unified: input ? 'tool-calls' : 'stop', raw: undefined }, usage: modelUsage, warnings: [] };
      },
    });
    const running = generateText({ model, prompt: 'Pay order P-1', tools, stopWhen: isStepCount(4) });
    const [asked] = await decidePending('aiPayout', [
      { verdict: 'changes_requested', feedback: 'At most 25.', suggestedPayload: { orderId: 'P-1', amount: 25 } },
    ]);
    const revised = await eventually(async () => {
      const approval = await reviewer().getApproval(asked!.id);
      return approval.status === 'pending' && approval.revision === 2 ? approval : undefined;
    });
    expect(revised.payload).toEqual({ orderId: 'P-1', amount: 25 });
    await reviewer().decide(asked!.id, { verdict: 'approved', revision: 2 });
    const result = await running;

    expect(executed).toEqual([{ orderId: 'P-1', amount: 25 }]);
    expect(JSON.parse(result.text)).toEqual({ paid: 25 });
    const { approvals } = await reviewer().listApprovals({ action: 'aiPayout' });
    expect(approvals.map((approval) => [approval.id, approval.status, approval.revision])).toEqual([[asked!.id, 'approved', 2]]);
  });

  it('passes a refusal by the API to the caller as the ApiError it is', async () => {
    const tools = withApprovalGate(
      { aiNote: tool({ inputSchema: z.object({ note: z.string() }), execute: async () => 'done' }) },
      { gate: gate(), policyKey: 'ai-refunds', wait: 1 },
    );
    const refused = await generateText({
      // PostgreSQL cannot store the NUL character: the API refuses the payload.
      model: scriptedAiModel([{ toolName: 'aiNote', input: { note: 'a\u0000b' } }]),
      prompt: 'go',
      tools,
      stopWhen: isStepCount(2),
    });
    const [error] = refused.steps[0]!.content.filter((part) => part.type === 'tool-error');
    expect(error).toMatchObject({ error: { name: 'ApiError', status: 422, code: 'validation_failed' } });
    expect((error as { error: ApiError }).error.fieldError('payload.note')).toContain('NUL');
  });
});

describe('the OpenAI Agents SDK adapter (resolveWithApprovalGate)', () => {
  it('settles each interruption in Approval Gate: the edited payload runs, a rejection’s feedback reaches the model', async () => {
    await org.request('put', '/v1/policies/agents-refunds').send({}).expect(200);
    const executed: unknown[] = [];
    const refund = agentsTool({
      name: 'agentsRefund',
      description: 'Refund an order',
      parameters: z.object({ orderId: z.string(), amount: z.number() }),
      needsApproval: true,
      execute: async (input) => {
        executed.push(input);
        return `refunded ${input.amount} on ${input.orderId}`;
      },
    });
    const agent = new Agent({
      name: 'billing',
      instructions: 'Refund what is asked.',
      tools: [refund],
      model: new ScriptedAgentsModel([
        { toolName: 'agentsRefund', input: { orderId: 'B-1', amount: 10 } },
        { toolName: 'agentsRefund', input: { orderId: 'B-2', amount: 20 } },
        { toolName: 'agentsRefund', input: { orderId: 'B-3', amount: 30 } },
      ]),
    });
    const runner = new Runner({ tracingDisabled: true });
    const interrupted = await runner.run(agent, 'Refund the three orders');
    expect(interrupted.interruptions).toHaveLength(3);
    expect(executed).toEqual([]);

    const resolving = resolveWithApprovalGate(interrupted, { gate: gate(), agent, runner, policyKey: 'agents-refunds', wait: 20 });
    const [, rejected] = await decidePending('agentsRefund', [
      { verdict: 'approved', editedPayload: { orderId: 'B-1', amount: 5 } },
      { verdict: 'rejected', feedback: 'B-2 was already refunded.' },
      { verdict: 'changes_requested', feedback: 'At most 25 without a receipt.' },
    ]);
    const result = await resolving;

    expect(result.interruptions).toEqual([]);
    expect(executed).toEqual([{ orderId: 'B-1', amount: 5 }]);
    const read = (JSON.parse(result.finalOutput!) as string[]).map((output) => (output.startsWith('{') ? JSON.parse(output) : output));
    expect(read).toEqual([
      'refunded 5 on B-1',
      expect.objectContaining({ approved: false, approvalId: rejected!.id, status: 'rejected', feedback: 'B-2 was already refunded.' }),
      expect.objectContaining({ status: 'changes_requested', feedback: 'At most 25 without a receipt.', suggestedPayload: null }),
    ]);
    // The history the model was sent carries the call as it ran: with the edited arguments.
    const call = result.history.find((item) => item.type === 'function_call' && item.arguments.includes('B-1'));
    expect(JSON.parse((call as { arguments: string }).arguments)).toEqual({ orderId: 'B-1', amount: 5 });
  });

  it('returns the run still interrupted when no decision comes in time; called again, it waits for the same request', async () => {
    await org.request('put', '/v1/policies/agents-slow').send({}).expect(200);
    const executed: unknown[] = [];
    const agent = new Agent({
      name: 'slow',
      tools: [
        agentsTool({
          name: 'agentsSlow',
          description: 'Do it',
          parameters: z.object({ amount: z.number() }),
          needsApproval: true,
          execute: async (input) => {
            executed.push(input);
            return 'done';
          },
        }),
      ],
      model: new ScriptedAgentsModel([{ toolName: 'agentsSlow', input: { amount: 1 } }]),
    });
    const runner = new Runner({ tracingDisabled: true });
    const options = { gate: gate(), agent, runner, policyKey: 'agents-slow', wait: 0 };
    const stillWaiting = await resolveWithApprovalGate(await runner.run(agent, 'go'), options);
    expect(stillWaiting.interruptions).toHaveLength(1);
    expect(executed).toEqual([]);

    await decidePending('agentsSlow', [{ verdict: 'approved' }]);
    const done = await resolveWithApprovalGate(stillWaiting, options);
    expect(done.interruptions).toEqual([]);
    expect(executed).toEqual([{ amount: 1 }]);
    expect((await reviewer().listApprovals({ action: 'agentsSlow' })).approvals).toHaveLength(1);
  });
});
