import { spawnSync } from 'node:child_process';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/eventually.js';
import { callAsTask, connectMcpHost, mcpServerCommand, type McpHostOptions } from './support/mcp-host.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
const clients: Client[] = [];

useTestEnv((created) => ({ env, org } = created));

/** A host connected to its own MCP server process, closed after the tests. */
async function connect(apiKey: string, options: Omit<McpHostOptions, 'baseUrl' | 'apiKey'> = {}) {
  const client = await connectMcpHost({ baseUrl: env.baseUrl, apiKey, ...options });
  clients.push(client);
  return client;
}

let agent: Client;
beforeAll(async () => {
  await org.request('put', '/v1/policies/review').send({}).expect(200);
  agent = await connect(org.key);
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

type Outcome = Record<string, unknown> & { approvalId: string; instruction: string };

describe('MCP server over stdio', () => {
  it('returns a request for changes with the feedback and an instruction to revise; revise_approval sends the revision and waits', async () => {
    const pendingOf = (revision: number) =>
      eventually(async () => {
        const listed = (await org.asReviewer('get', '/v1/approvals?action=mcp-refund&status=pending').expect(200)).body.approvals as {
          id: string;
          revision: number;
        }[];
        return listed.find((approval) => approval.revision === revision);
      });
    const asking = agent.callTool({
      name: 'request_approval',
      arguments: { action: 'mcp-refund', payload: { amount: 120 }, policyKey: 'review', waitSeconds: 20 },
    });
    const first = await pendingOf(1);
    await eventually(() => env.services.settlements.waiting === 1);
    await org
      .asReviewer('post', `/v1/approvals/${first.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Only 100, please.', suggestedPayload: { amount: 100 } })
      .expect(200);
    const asked = await asking;
    expect(asked.isError).toBeFalsy();
    expect(asked.structuredContent).toMatchObject({
      approvalId: first.id,
      status: 'changes_requested',
      settled: true,
      feedback: 'Only 100, please.',
      suggestedPayload: { amount: 100 },
      revision: 1,
      payload: null,
    });
    const instruction = (asked.structuredContent as Outcome).instruction;
    expect(instruction).toContain('do not execute');
    expect(instruction).toContain('Only 100, please.');
    expect(instruction).toContain('revise_approval');

    const revising = agent.callTool({
      name: 'revise_approval',
      arguments: { approvalId: first.id, payload: { amount: 100 }, note: 'Lowered to 100.', waitSeconds: 20 },
    });
    await pendingOf(2);
    await eventually(() => env.services.settlements.waiting === 1);
    await org.asReviewer('post', `/v1/approvals/${first.id}/decision`).send({ verdict: 'approved', revision: 2 }).expect(200);
    const revised = await revising;
    expect(revised.isError).toBeFalsy();
    expect(revised.structuredContent).toMatchObject({ approvalId: first.id, status: 'approved', payload: { amount: 100 }, edited: false });

    // A second revision of a settled request is refused, as a tool error the model can read.
    const again = await agent.callTool({ name: 'revise_approval', arguments: { approvalId: first.id, payload: { amount: 1 } } });
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toContain('409 (conflict)');
  });

  it('lists its four tools with input schemas from the approval schemas', async () => {
    const { tools } = await agent.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['get_approval', 'list_approvals', 'request_approval', 'revise_approval']);
    const revise = tools.find((tool) => tool.name === 'revise_approval')!;
    expect(revise.inputSchema.required).toEqual(expect.arrayContaining(['approvalId', 'payload']));
    expect(revise.inputSchema.properties).toMatchObject({ payload: { type: 'object' }, note: expect.anything() });
    const request = tools.find((tool) => tool.name === 'request_approval')!;
    expect(request.inputSchema.required).toEqual(expect.arrayContaining(['action', 'payload', 'policyKey']));
    expect(request.inputSchema.properties).toMatchObject({
      action: { type: 'string', minLength: 1, maxLength: 200 },
      payload: { type: 'object' },
      onBehalfOf: expect.anything(),
      waitSeconds: { type: 'integer', maximum: 3600, default: 50 },
    });
    expect(request.execution).toEqual({ taskSupport: 'optional' });
    expect(revise.execution).toEqual({ taskSupport: 'optional' });
    const get = tools.find((tool) => tool.name === 'get_approval')!;
    expect(get.inputSchema.properties).toMatchObject({ approvalId: { type: 'string', format: 'uuid' }, waitSeconds: { maximum: 50 } });
  });

  it('request_approval waits for the reviewer and returns the verdict, the feedback and the edited payload', async () => {
    const progress: unknown[] = [];
    const calling = agent.callTool(
      {
        name: 'request_approval',
        arguments: { action: 'refund', payload: { amount: 120, to: 'ann' }, policyKey: 'review', waitSeconds: 20 },
      },
      undefined,
      { onprogress: (update) => progress.push(update), resetTimeoutOnProgress: true },
    );
    const pending = await eventually(
      async () =>
        (await org.asReviewer('get', '/v1/approvals?action=refund&status=pending').expect(200)).body.approvals[0] as { id: string },
    );
    await eventually(() => env.services.settlements.waiting === 1);
    await org
      .asReviewer('post', `/v1/approvals/${pending.id}/decision`)
      .send({ verdict: 'approved', feedback: 'at most 100', editedPayload: { amount: 100, to: 'ann' } })
      .expect(200);

    const result = await calling;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      approvalId: pending.id,
      status: 'approved',
      settled: true,
      verdict: 'approved',
      feedback: 'at most 100',
      payload: { amount: 100, to: 'ann' },
      edited: true,
    });
    expect((result.structuredContent as Outcome).instruction).toMatch(/edited/);
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(result.structuredContent);
    expect(progress.length).toBeGreaterThanOrEqual(1);
  });

  it('request_approval returns a rejection with the feedback and no payload', async () => {
    const calling = agent.callTool({
      name: 'request_approval',
      arguments: { action: 'delete', payload: { all: true }, policyKey: 'review' },
    });
    const pending = await eventually(
      async () =>
        (await org.asReviewer('get', '/v1/approvals?action=delete&status=pending').expect(200)).body.approvals[0] as { id: string },
    );
    await org.asReviewer('post', `/v1/approvals/${pending.id}/decision`).send({ verdict: 'rejected', feedback: 'never' }).expect(200);
    expect((await calling).structuredContent).toMatchObject({ status: 'rejected', verdict: 'rejected', feedback: 'never', payload: null });
  });

  it('answers pending when no decision comes in time, and get_approval reads it later', async () => {
    const started = Date.now();
    const result = await agent.callTool({
      name: 'request_approval',
      arguments: { action: 'wait', payload: {}, policyKey: 'review', waitSeconds: 1 },
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    const outcome = result.structuredContent as Outcome;
    expect(outcome).toMatchObject({ status: 'pending', settled: false, verdict: null, payload: null });
    expect(outcome.instruction).toMatch(/Still pending.*get_approval/);

    await org.asReviewer('post', `/v1/approvals/${outcome.approvalId}/decision`).send({ verdict: 'approved' }).expect(200);
    const read = await agent.callTool({ name: 'get_approval', arguments: { approvalId: outcome.approvalId } });
    expect(read.structuredContent).toMatchObject({ approvalId: outcome.approvalId, status: 'approved', payload: {}, edited: false });

    const listed = await agent.callTool({ name: 'list_approvals', arguments: { status: ['approved'], action: 'wait', limit: 5 } });
    expect(listed.structuredContent).toMatchObject({
      approvals: [{ approvalId: outcome.approvalId, status: 'approved' }],
      nextCursor: null,
    });
  });

  it('stops waiting on the service when the host cancels the call', async () => {
    const cancel = new AbortController();
    const calling = agent.callTool(
      { name: 'request_approval', arguments: { action: 'cancelled', payload: {}, policyKey: 'review', waitSeconds: 60 } },
      undefined,
      { signal: cancel.signal },
    );
    await eventually(() => env.services.settlements.waiting === 1);
    cancel.abort();
    await expect(calling).rejects.toThrow();
    await eventually(() => env.services.settlements.waiting === 0);
  });

  it('answers the API’s refusal as a tool error naming the field', async () => {
    const result = await agent.callTool({
      name: 'request_approval',
      arguments: { action: 'nul', payload: { note: 'a\u0000b' }, policyKey: 'review' },
    });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0]!.text;
    expect(text).toMatch(/^Approval Gate answered 422 \(validation_failed\)/);
    expect(text).toContain('- payload.note: payload.note must not contain the NUL character (U+0000)');
    expect(result.structuredContent).toMatchObject({ error: { status: 422, code: 'validation_failed' } });
  });

  it('answers a revoked or wrong key as a tool error', async () => {
    const stranger = await connect('ag_not_a_key');
    const result = await stranger.callTool({ name: 'get_approval', arguments: { approvalId: '00000000-0000-4000-8000-000000000000' } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(/^Approval Gate answered 401 \(unauthorized\)/);
  });

  it('refuses arguments its schema does not accept, before asking the API', async () => {
    const result = await agent.callTool({ name: 'request_approval', arguments: { action: 'x', payload: [1], policyKey: 'review' } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toContain('payload must be a JSON object');
  });

  it('exits at once, naming the variables, when it is not configured', () => {
    const run = spawnSync(mcpServerCommand.command, mcpServerCommand.args, {
      env: { PATH: process.env.PATH ?? '', APPROVAL_GATE_URL: 'localhost:3000', APPROVAL_GATE_MCP_CALL_SECONDS: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('APPROVAL_GATE_URL must be a URL');
    expect(run.stderr).toContain('APPROVAL_GATE_API_KEY is required');
    expect(run.stderr).toContain('APPROVAL_GATE_MCP_CALL_SECONDS');
  });
});

/** The pending approval of `action` in the organization, once there is one. */
const pendingOf = (action: string) =>
  eventually(
    async () =>
      (await org.asReviewer('get', `/v1/approvals?action=${action}&status=pending`).expect(200)).body.approvals[0] as
        { id: string } | undefined,
  );

describe('MCP server, a client without task support', () => {
  it('answers within the configured call time with the pending request, and get_approval waits on for the decision', async () => {
    const host = await connect(org.key, { extraEnv: { APPROVAL_GATE_MCP_CALL_SECONDS: '2' } });
    const progress: unknown[] = [];
    const started = Date.now();
    const asked = await host.callTool(
      { name: 'request_approval', arguments: { action: 'bounded', payload: { n: 1 }, policyKey: 'review', waitSeconds: 3600 } },
      undefined,
      { onprogress: (update) => progress.push(update) },
    );
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_500);
    expect(elapsed).toBeLessThan(10_000);
    expect(asked.isError).toBeFalsy();
    const outcome = asked.structuredContent as Outcome;
    expect(outcome).toMatchObject({ status: 'pending', settled: false, payload: null });
    expect(outcome.instruction).toMatch(/get_approval.*waitSeconds \(up to 2\)/);
    expect(progress.length).toBeGreaterThanOrEqual(1);

    // The model goes on with get_approval: its wait is bounded the same way, and sees the decision.
    const waiting = host.callTool({ name: 'get_approval', arguments: { approvalId: outcome.approvalId, waitSeconds: 2 } });
    await eventually(() => env.services.settlements.waiting === 1);
    await org.asReviewer('post', `/v1/approvals/${outcome.approvalId}/decision`).send({ verdict: 'approved' }).expect(200);
    expect((await waiting).structuredContent).toMatchObject({ approvalId: outcome.approvalId, status: 'approved', payload: { n: 1 } });

    const tooLong = await host.callTool({ name: 'get_approval', arguments: { approvalId: outcome.approvalId, waitSeconds: 3 } });
    expect(tooLong.isError).toBe(true);
    expect(JSON.stringify(tooLong.content)).toContain('waitSeconds');
  });
});

describe('MCP server, a client with task support', () => {
  let host: Client;
  beforeAll(async () => {
    host = await connect(org.key, { withTasks: true, extraEnv: { APPROVAL_GATE_MCP_TASK_POLL_MS: '200' } });
  });

  it('answers request_approval with a task at once; the task works until the decision, with progress, and ends with it', async () => {
    const started = Date.now();
    const call = await callAsTask(host, 'request_approval', { action: 'tasked', payload: { amount: 120 }, policyKey: 'review' });
    const task = await call.taskCreated;
    expect(Date.now() - started).toBeLessThan(5_000);
    const pending = await pendingOf('tasked');
    expect(task).toMatchObject({ taskId: `${pending.id}:r1`, status: 'working', ttl: null, pollInterval: 200 });
    expect(await host.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'working' });

    await eventually(() => env.services.settlements.waiting === 1);
    await eventually(() => call.progress.length >= 1);
    // The stream polls the task at its own pace; a decision before its first poll would skip straight to `completed`.
    await eventually(() => call.messages.some((message) => message.type === 'taskStatus' && message.task.status === 'working'));
    await org
      .asReviewer('post', `/v1/approvals/${pending.id}/decision`)
      .send({ verdict: 'approved', editedPayload: { amount: 100 } })
      .expect(200);

    const messages = await call.done;
    const result = messages.at(-1)!;
    expect(result.type).toBe('result');
    expect((result as { result: CallToolResult }).result.structuredContent).toMatchObject({
      approvalId: pending.id,
      status: 'approved',
      payload: { amount: 100 },
      edited: true,
    });
    expect(await host.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
  });

  it('keeps a task when the MCP server process that made it is gone: its state is the approval', async () => {
    const first = await connect(org.key, { withTasks: true });
    const call = await callAsTask(first, 'request_approval', { action: 'outlives', payload: {}, policyKey: 'review' });
    const task = await call.taskCreated;
    await first.close();
    await call.done.catch(() => {});

    const second = host; // another process of the same configuration
    expect(await second.experimental.tasks.getTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'working' });
    const pending = await pendingOf('outlives');
    const resulting = second.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await org.asReviewer('post', `/v1/approvals/${pending.id}/decision`).send({ verdict: 'rejected', feedback: 'not today' }).expect(200);
    expect((await resulting).structuredContent).toMatchObject({ status: 'rejected', feedback: 'not today', payload: null });
    expect(await second.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'completed' });
  });

  it('runs revise_approval as a task too, and ends the first task when changes are asked', async () => {
    const asking = await callAsTask(host, 'request_approval', { action: 'tasked-revise', payload: { amount: 120 }, policyKey: 'review' });
    const first = await asking.taskCreated;
    const pending = await pendingOf('tasked-revise');
    await org
      .asReviewer('post', `/v1/approvals/${pending.id}/decision`)
      .send({ verdict: 'changes_requested', feedback: 'Only 100.' })
      .expect(200);
    expect((await asking.done).at(-1)).toMatchObject({
      type: 'result',
      result: { structuredContent: { status: 'changes_requested', feedback: 'Only 100.', revision: 1 } },
    });

    const revising = await callAsTask(host, 'revise_approval', { approvalId: pending.id, payload: { amount: 100 }, note: 'Lowered.' });
    const second = await revising.taskCreated;
    expect(second).toMatchObject({ taskId: `${pending.id}:r2`, status: 'working' });
    // The first task stays completed although its approval is pending again.
    expect(await host.experimental.tasks.getTask(first.taskId)).toMatchObject({ status: 'completed' });
    await org.asReviewer('post', `/v1/approvals/${pending.id}/decision`).send({ verdict: 'approved', revision: 2 }).expect(200);
    expect((await revising.done).at(-1)).toMatchObject({
      type: 'result',
      result: { structuredContent: { status: 'approved', payload: { amount: 100 }, edited: false } },
    });
  });

  it('ends a refused request as a failed task carrying the problem, and cancels a task without withdrawing the request', async () => {
    const refused = await callAsTask(host, 'request_approval', { action: 'x', payload: { note: 'a\u0000b' }, policyKey: 'review' });
    const failed = await refused.taskCreated;
    expect(failed.status).toBe('failed');
    const result = await host.experimental.tasks.getTaskResult(failed.taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { status: 422, code: 'validation_failed' } } });

    const call = await callAsTask(host, 'request_approval', { action: 'tasked-cancel', payload: {}, policyKey: 'review' });
    const task = await call.taskCreated;
    await eventually(() => env.services.settlements.waiting === 1);
    expect(await host.experimental.tasks.cancelTask(task.taskId)).toMatchObject({ status: 'cancelled' });
    await eventually(() => env.services.settlements.waiting === 0);
    expect(await host.experimental.tasks.getTask(task.taskId)).toMatchObject({ status: 'cancelled' });
    await call.done.catch(() => {});
    expect(await pendingOf('tasked-cancel')).toBeDefined();
  });
});
