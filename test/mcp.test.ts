import { spawnSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/eventually.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
const clients: Client[] = [];

useTestEnv((created) => ({ env, org } = created));

/** The MCP server as an MCP host starts it: `node` with the entry point, configured by its environment. */
const serverCommand = { command: process.execPath, args: ['--import', 'tsx', 'packages/mcp/src/main.ts'] };

async function connect(apiKey: string): Promise<Client> {
  const client = new Client({ name: 'approval-gate-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      ...serverCommand,
      env: { PATH: process.env.PATH ?? '', APPROVAL_GATE_URL: env.baseUrl, APPROVAL_GATE_API_KEY: apiKey },
      stderr: 'pipe',
    }),
  );
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
      waitSeconds: { type: 'integer', maximum: 3600 },
    });
    const get = tools.find((tool) => tool.name === 'get_approval')!;
    expect(get.inputSchema.properties).toMatchObject({ approvalId: { type: 'string', format: 'uuid' }, waitSeconds: { maximum: 30 } });
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
    expect(outcome.instruction).toMatch(/No decision within 1 s.*get_approval/);

    await org.asReviewer('post', `/v1/approvals/${outcome.approvalId}/decision`).send({ verdict: 'approved' }).expect(200);
    const read = await agent.callTool({ name: 'get_approval', arguments: { approvalId: outcome.approvalId } });
    expect(read.structuredContent).toMatchObject({ approvalId: outcome.approvalId, status: 'approved', payload: {}, edited: null });

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
    const run = spawnSync(serverCommand.command, serverCommand.args, {
      env: { PATH: process.env.PATH ?? '', APPROVAL_GATE_URL: 'localhost:3000' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('APPROVAL_GATE_URL must be a URL');
    expect(run.stderr).toContain('APPROVAL_GATE_API_KEY is required');
  });
});
