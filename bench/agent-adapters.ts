// Decision-to-tool-result latency through the framework adapters at low load: from a reviewer's
// decision to the moment the agent's model is handed the tool's result, through the AI SDK adapter
// (`withApprovalGate`, the SDK's mock language model) and the OpenAI Agents SDK adapter
// (`resolveWithApprovalGate`, a scripted model, which also resumes the run), against the same
// figure for the bare client's `requestApproval` (the ceiling: the wake-up both are built on).
//
//   npm run bench:agent-adapters
//   BENCH_ROUNDS=50 npm run bench:agent-adapters
//
// Two web processes, as in production: the agent waits on one, the reviewer decides through the
// other. Each round starts one agent run whose model calls one tool, waits until its approval is
// pending and BENCH_SETTLE_MS more (the long-poll held), and decides it, alternating approved and
// rejected with feedback. One round at a time: low load. The last line of stdout is the figures as JSON.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, Runner, tool as agentsTool } from '@openai/agents';
import { generateText, isStepCount, tool } from 'ai';
import { z } from 'zod';
import { withApprovalGate } from '../src/client/ai-sdk.js';
import { createApprovalGateClient } from '../src/client/index.js';
import { resolveWithApprovalGate } from '../src/client/openai-agents.js';
import { ScriptedAgentsModel, scriptedAiModel } from '../test/support/scripted-models.js';
import { formatTable, round, stats } from './lib/figures.js';
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

const PATHS = ['client', 'ai-sdk', 'openai-agents'] as const;
type Path = (typeof PATHS)[number];

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

  const gate = createApprovalGateClient({ baseUrl: `http://${HOST}:${AGENT_PORT}`, apiKey: org!.key });
  const reviewer = createApprovalGateClient({ baseUrl: `http://${HOST}:${REVIEWER_PORT}`, apiKey: org!.reviewerKey });
  const runner = new Runner({ tracingDisabled: true });
  const parameters = z.object({ amount: z.number() });

  /** Starts one agent run of `path` asking about `action`; resolves with when its tool result reached the model. */
  function startRun(path: Path, action: string): Promise<number> {
    const input = { amount: 5000 };
    if (path === 'client') {
      return gate.requestApproval({ action, payload: input, policyKey: POLICY }, { wait: 30 }).then(() => performance.now());
    }
    let reachedAt = 0;
    const reached = () => (reachedAt = performance.now());
    if (path === 'ai-sdk') {
      const tools = withApprovalGate(
        { [action]: tool({ inputSchema: parameters, execute: async () => 'done' }) },
        { gate, policyKey: POLICY, wait: 30 },
      );
      return generateText({
        model: scriptedAiModel([{ toolName: action, input }], reached),
        prompt: 'go',
        tools,
        stopWhen: isStepCount(2),
      }).then(() => reachedAt);
    }
    const agent = new Agent({
      name: 'bench',
      tools: [agentsTool({ name: action, description: 'Do it', parameters, needsApproval: true, execute: async () => 'done' })],
      model: new ScriptedAgentsModel([{ toolName: action, input }], reached),
    });
    return runner
      .run(agent, 'go')
      .then((interrupted) => resolveWithApprovalGate(interrupted, { gate, agent, runner, policyKey: POLICY, wait: 30 }))
      .then(() => reachedAt);
  }

  const latencies: Record<Path, number[]> = { client: [], 'ai-sdk': [], 'openai-agents': [] };
  const started = performance.now();
  for (let index = 0; index < ROUNDS * PATHS.length; index++) {
    const path = PATHS[index % PATHS.length]!;
    const action = `bench_${path.replace(/-/g, '_')}_${index}`;
    const running = startRun(path, action);
    let failure: { error: unknown } | undefined;
    running.catch((error: unknown) => (failure = { error }));
    let pendingId: string | undefined;
    while (!pendingId) {
      if (failure) throw failure.error;
      pendingId = (await reviewer.listApprovals({ action, status: 'pending' })).approvals[0]?.id;
      if (!pendingId) await sleep(5);
    }
    await sleep(SETTLE_MS);
    const approve = Math.floor(index / PATHS.length) % 2 === 0;
    await reviewer.decide(pendingId, approve ? { verdict: 'approved' } : { verdict: 'rejected', feedback: 'Not this one.' });
    const decidedAt = performance.now();
    latencies[path].push((await running) - decidedAt);
  }
  log(`${ROUNDS} rounds of each path in ${round((performance.now() - started) / 1000)} s`);

  const figures = {
    benchmark: 'agent-adapters',
    at: new Date().toISOString(),
    settings: { rounds: ROUNDS, settleMs: SETTLE_MS },
    ...Object.fromEntries(PATHS.map((path) => [path, stats(latencies[path])])),
  };
  console.log(`\nFrom the decision's response to the tool's result reaching the model, one run at a time (${ROUNDS} rounds each)\n`);
  console.log(
    formatTable(
      ['path', 'n', 'p50 ms', 'p99 ms', 'max ms'],
      PATHS.map((path) => {
        const s = stats(latencies[path]);
        return [path, latencies[path].length, s.p50, s.p99, s.max];
      }),
    ),
  );
  console.log(JSON.stringify(figures));
});
