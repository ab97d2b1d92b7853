// Decision-to-tool-result latency through every path an agent asks by, at low load: from a
// reviewer's decision to the moment the agent has the tool's result in hand, through
// - the bare TypeScript client's `requestApproval` (the ceiling: the wake-up the others are built on);
// - the AI SDK adapter (`withApprovalGate`, the SDK's mock language model: when the model is handed the result);
// - the OpenAI Agents SDK adapter (`resolveWithApprovalGate`, a scripted model, which also resumes the run);
// - the Python client (`request_approval` in a long-lived python3, which takes the time itself:
//   when the call returned);
// - the MCP server (`approval-gate-mcp` over stdio, the MCP SDK's own client): a `request_approval`
//   call from a client without task support, answered when decided within the call's time, and
//   one from a client with task support, which gets a task and polls it at the interval the
//   server advises, up to the task's result.
//
//   npm run bench:agent-adapters
//   BENCH_ROUNDS=50 npm run bench:agent-adapters
//
// Two web processes, as in production: the agent waits on one, the reviewer decides through the
// other. Each round starts one agent run whose model calls one tool (or one call of the Python
// agent or of an MCP host), waits until its approval is pending and BENCH_SETTLE_MS more (the
// long-poll held), and decides it, alternating approved and rejected with feedback. A client that
// polls sees a decision at its next poll, so for the MCP task the decision waits a further random
// part of its poll interval, as a reviewer's decision comes at no particular moment of it. One
// round at a time: low load. Times are read on CLOCK_MONOTONIC, which python3 reads too (checked
// at its start). Each path's p50 is also given over the bare client's. The last line of stdout is
// the figures as JSON.
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, Runner, tool as agentsTool } from '@openai/agents';
import { generateText, isStepCount, tool } from 'ai';
import { z } from 'zod';
import { withApprovalGate } from '../src/client/ai-sdk.js';
import { createApprovalGateClient } from '../src/client/index.js';
import { resolveWithApprovalGate } from '../src/client/openai-agents.js';
import { callAsTask, connectMcpHost } from '../test/support/mcp-host.js';
import { startPython } from '../test/support/python-client.js';
import { ScriptedAgentsModel, scriptedAiModel } from '../test/support/scripted-models.js';
import { formatTable, round, stats, type Stats } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase, HOST } from './lib/fixtures.js';
import { putPolicy } from './lib/http.js';
import { startWebServer } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const ROUNDS = envInt('BENCH_ROUNDS', 200);
const SETTLE_MS = envInt('BENCH_SETTLE_MS', 50);
const DATABASE = 'approval_gate_bench_agent_adapters';
const REDIS_PREFIX = 'agbench-adapters';
const AGENT_PORT = 3951;
const REVIEWER_PORT = 3952;
const POLICY = 'bench-review';
const WAIT_SECONDS = 30;

const PATHS = ['client', 'ai-sdk', 'openai-agents', 'python', 'mcp-call', 'mcp-task'] as const;
type Path = (typeof PATHS)[number];

/** Milliseconds on CLOCK_MONOTONIC (libuv's clock on Linux), the clock of Python's `time.monotonic_ns`. */
const now = () => Number(process.hrtime.bigint()) / 1e6;

/**
 * The Python agent: for each line `{action, payload}` on its stdin, asks and waits as the bare
 * client does, and prints the status with the moment the answer was in hand (nanoseconds on
 * CLOCK_MONOTONIC). Its first line is the moment it started, to check that the clocks compare.
 */
const PYTHON_AGENT = `
import json, os, sys, time

def emit(value):
    print(json.dumps(value), flush=True)

emit({"startedAt": time.monotonic_ns()})
from approval_gate import ApprovalGate
gate = ApprovalGate(os.environ["AG_URL"], os.environ["AG_KEY"])
for line in sys.stdin:
    asked = json.loads(line)
    approval = gate.request_approval(asked["action"], asked["payload"], "${POLICY}", wait=${WAIT_SECONDS})
    emit({"status": approval["status"], "inHandAt": time.monotonic_ns()})
`;

/** One agent run: when its tool's result was in hand, and, for a client that polls, its poll interval. */
interface Run {
  resultAt: Promise<number>;
  pollIntervalMs?: Promise<number>;
}

/** A tool answer of the MCP server, refused unless it carries the decision. */
function checkDecided(result: Record<string, unknown>): void {
  if (result.isError || (result.structuredContent as { settled?: boolean } | undefined)?.settled !== true)
    throw new Error(`request_approval answered without a decision: ${JSON.stringify(result)}`);
}

runBenchmark('bench:agent-adapters', 20 * 60_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    const deleted = await deleteRedisKeys(REDIS_PREFIX);
    log(`cleaned up: dropped ${DATABASE}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:*`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [org] = await createOrgs(dbUrl, 1);
  const agentApi = await startWebServer({ port: AGENT_PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX });
  cleanup(() => agentApi.stop());
  const reviewerApi = await startWebServer({ port: REVIEWER_PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX });
  cleanup(() => reviewerApi.stop());
  await putPolicy(AGENT_PORT, org!.key, POLICY, { defaultOutcome: 'review', timeoutSeconds: 3600 });

  const agentUrl = `http://${HOST}:${AGENT_PORT}`;
  const gate = createApprovalGateClient({ baseUrl: agentUrl, apiKey: org!.key });
  const reviewer = createApprovalGateClient({ baseUrl: `http://${HOST}:${REVIEWER_PORT}`, apiKey: org!.reviewerKey });
  const runner = new Runner({ tracingDisabled: true });
  const parameters = z.object({ amount: z.number() });

  const pythonSpawnedAt = now();
  const python = startPython(PYTHON_AGENT, { url: agentUrl, key: org!.key });
  cleanup(() => {
    python.child.kill();
    return python.exited.catch(() => {});
  });
  const pythonLine = async () => {
    const next = await python.lines.next();
    if (next.done) {
      await python.exited;
      throw new Error('the Python agent stopped printing');
    }
    return next.value;
  };
  const pythonStartedAt = Number((await pythonLine()).startedAt) / 1e6;
  if (!(pythonStartedAt >= pythonSpawnedAt && pythonStartedAt <= now()))
    throw new Error("python3's time.monotonic_ns is not this process's clock: its times cannot be compared with the decision's");

  const mcpHost = await connectMcpHost({ baseUrl: agentUrl, apiKey: org!.key });
  cleanup(() => mcpHost.close());
  const mcpTaskHost = await connectMcpHost({ baseUrl: agentUrl, apiKey: org!.key, withTasks: true });
  cleanup(() => mcpTaskHost.close());

  /** Starts one agent run of `path` asking about `action`. */
  function startRun(path: Path, action: string): Run {
    const input = { amount: 5000 };
    switch (path) {
      case 'client':
        return {
          resultAt: gate.requestApproval({ action, payload: input, policyKey: POLICY }, { wait: WAIT_SECONDS }).then(() => now()),
        };
      case 'ai-sdk': {
        let reachedAt = 0;
        const tools = withApprovalGate(
          { [action]: tool({ inputSchema: parameters, execute: async () => 'done' }) },
          { gate, policyKey: POLICY, wait: WAIT_SECONDS },
        );
        return {
          resultAt: generateText({
            model: scriptedAiModel([{ toolName: action, input }], () => (reachedAt = now())),
            prompt: 'go',
            tools,
            stopWhen: isStepCount(2),
          }).then(() => reachedAt),
        };
      }
      case 'openai-agents': {
        let reachedAt = 0;
        const agent = new Agent({
          name: 'bench',
          tools: [agentsTool({ name: action, description: 'Do it', parameters, needsApproval: true, execute: async () => 'done' })],
          model: new ScriptedAgentsModel([{ toolName: action, input }], () => (reachedAt = now())),
        });
        return {
          resultAt: runner
            .run(agent, 'go')
            .then((interrupted) => resolveWithApprovalGate(interrupted, { gate, agent, runner, policyKey: POLICY, wait: WAIT_SECONDS }))
            .then(() => reachedAt),
        };
      }
      case 'python':
        python.child.stdin.write(`${JSON.stringify({ action, payload: input })}\n`);
        return {
          resultAt: pythonLine().then((answer) => {
            if (answer.status === 'pending') throw new Error(`the Python agent answered without a decision: ${JSON.stringify(answer)}`);
            return Number(answer.inHandAt) / 1e6;
          }),
        };
      case 'mcp-call':
        return {
          resultAt: mcpHost
            .callTool({ name: 'request_approval', arguments: { action, payload: input, policyKey: POLICY, waitSeconds: WAIT_SECONDS } })
            .then((result) => {
              checkDecided(result);
              return now();
            }),
        };
      case 'mcp-task': {
        const call = callAsTask(mcpTaskHost, 'request_approval', { action, payload: input, policyKey: POLICY });
        return {
          resultAt: call
            .then(({ done }) => done)
            .then((messages) => {
              const last = messages.at(-1);
              if (last?.type !== 'result') throw new Error(`the task ended without a result: ${JSON.stringify(messages)}`);
              checkDecided(last.result);
              return now();
            }),
          pollIntervalMs: call.then(({ taskCreated }) => taskCreated).then((task) => task.pollInterval ?? 0),
        };
      }
    }
  }

  const latencies = Object.fromEntries(PATHS.map((path) => [path, [] as number[]])) as Record<Path, number[]>;
  const started = now();
  for (let index = 0; index < ROUNDS * PATHS.length; index++) {
    const path = PATHS[index % PATHS.length]!;
    const action = `bench_${path.replace(/-/g, '_')}_${index}`;
    const run = startRun(path, action);
    const pollIntervalMs = run.pollIntervalMs ?? Promise.resolve(0);
    let failure: { error: unknown } | undefined;
    Promise.all([run.resultAt, pollIntervalMs]).catch((error: unknown) => (failure = { error }));
    let pendingId: string | undefined;
    while (!pendingId) {
      if (failure) throw failure.error;
      pendingId = (await reviewer.listApprovals({ action, status: 'pending' })).approvals[0]?.id;
      if (!pendingId) await sleep(5);
    }
    await sleep(SETTLE_MS + Math.random() * (await pollIntervalMs));
    const approve = Math.floor(index / PATHS.length) % 2 === 0;
    await reviewer.decide(pendingId, approve ? { verdict: 'approved' } : { verdict: 'rejected', feedback: 'Not this one.' });
    const decidedAt = now();
    latencies[path].push((await run.resultAt) - decidedAt);
  }
  log(`${ROUNDS} rounds of each path in ${round((now() - started) / 1000)} s`);

  const clientP50 = stats(latencies.client).p50;
  const figures = Object.fromEntries(
    PATHS.map((path) => {
      const spread = stats(latencies[path]);
      return [path, { ...spread, p50OverClient: round(spread.p50 / clientP50, 2) }];
    }),
  ) as Record<Path, Stats & { p50OverClient: number }>;
  console.log(`\nFrom the decision's response to the tool's result in the agent's hands, one run at a time (${ROUNDS} rounds each)\n`);
  console.log(
    formatTable(
      ['path', 'n', 'p50 ms', 'p99 ms', 'max ms', 'p50 / client p50'],
      PATHS.map((path) => [
        path,
        latencies[path].length,
        figures[path].p50,
        figures[path].p99,
        figures[path].max,
        figures[path].p50OverClient,
      ]),
    ),
  );
  console.log(
    JSON.stringify({
      benchmark: 'agent-adapters',
      at: new Date().toISOString(),
      settings: { rounds: ROUNDS, settleMs: SETTLE_MS },
      ...figures,
    }),
  );
});
