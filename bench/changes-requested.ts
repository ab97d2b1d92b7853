// Decision-to-agent latency of a request for changes at low load: how soon an agent waiting with
// `GET /v1/approvals/:id?wait=30` hears that a reviewer asked for changes, measured against the same
// figure for an approval (the ceiling: the wake-up every decision already had) in the same run.
//
//   npm run bench:changes-requested
//   BENCH_ROUNDS=100 npm run bench:changes-requested
//
// Two web processes, as in production: the agent waits on one, the reviewer decides through the
// other, so each answer crosses Redis. Each round creates a pending approval, opens the agent's
// long-poll, waits BENCH_SETTLE_MS for it to be held, and sends one decision; rounds alternate
// between `changes_requested` (then revised, as the agent would, and approved on the revision: a
// second wake-up of the same loop) and a plain `approved`. One round at a time: low load. The
// latency is from the decision's response to the waiter's answer (and from the decision being
// sent). The last line of stdout is the figures as JSON.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatTable, round, stats } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase, type BenchOrg } from './lib/fixtures.js';
import { expectJson, putPolicy, requestJson } from './lib/http.js';
import { startWebServer } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const ROUNDS = envInt('BENCH_ROUNDS', 300);
const SETTLE_MS = envInt('BENCH_SETTLE_MS', 50);
const DATABASE = 'approval_gate_bench_changes';
const REDIS_PREFIX = 'agbench-changes';
const AGENT_PORT = 3941;
const REVIEWER_PORT = 3942;
const WAIT_S = 30;

type Verdict = 'changes_requested' | 'approved';

interface Wake {
  /** From the decision's response to the waiter's answer. */
  sinceResponseMs: number;
  /** From the decision being sent to the waiter's answer. */
  sinceSentMs: number;
}

/** Holds a long-poll on the agent's process, decides through the reviewer's, and times the wake-up. */
async function wakeUp(org: BenchOrg, id: string, body: Record<string, unknown>, expected: string): Promise<Wake> {
  let answeredAt = 0;
  const waiting = requestJson({
    port: AGENT_PORT,
    method: 'GET',
    path: `/v1/approvals/${id}?wait=${WAIT_S}`,
    key: org.key,
    timeoutMs: (WAIT_S + 10) * 1000,
  }).then((response) => {
    answeredAt = performance.now();
    return response;
  });
  await sleep(SETTLE_MS);
  const sentAt = performance.now();
  await expectJson(200, { port: REVIEWER_PORT, method: 'POST', path: `/v1/approvals/${id}/decision`, key: org.reviewerKey, body });
  const respondedAt = performance.now();
  const answer = await waiting;
  const status = (answer.body as { status?: string }).status;
  if (answer.status !== 200 || status !== expected) throw new Error(`the waiter on ${id} got ${answer.status} ${status}, not ${expected}`);
  return { sinceResponseMs: answeredAt - respondedAt, sinceSentMs: answeredAt - sentAt };
}

runBenchmark('bench:changes-requested', 20 * 60_000, async (cleanup) => {
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
  await putPolicy(AGENT_PORT, org!.key, 'bench-review', { defaultOutcome: 'review', timeoutSeconds: 3600 });

  const wakes: Record<Verdict | 'approved after revision', Wake[]> = {
    changes_requested: [],
    approved: [],
    'approved after revision': [],
  };
  const started = performance.now();
  for (let round = 0; round < ROUNDS; round++) {
    const created = await expectJson(201, {
      port: AGENT_PORT,
      method: 'POST',
      path: '/v1/approvals',
      key: org!.key,
      body: { action: 'refund', payload: { amount: 5000, currency: 'EUR' }, policyKey: 'bench-review', agent: 'bench-agent' },
    });
    const id = created.id as string;
    if (round % 2 === 1) {
      wakes.approved.push(await wakeUp(org!, id, { verdict: 'approved' }, 'approved'));
      continue;
    }
    wakes.changes_requested.push(await wakeUp(org!, id, { verdict: 'changes_requested', feedback: 'Half of it.' }, 'changes_requested'));
    await expectJson(201, {
      port: AGENT_PORT,
      method: 'POST',
      path: `/v1/approvals/${id}/revisions`,
      key: org!.key,
      body: { payload: { amount: 2500, currency: 'EUR' }, note: 'Halved.' },
    });
    wakes['approved after revision'].push(await wakeUp(org!, id, { verdict: 'approved', revision: 2 }, 'approved'));
  }
  const seconds = (performance.now() - started) / 1000;
  log(`${ROUNDS} rounds in ${round(seconds)} s`);

  const figure = (list: Wake[]) => ({
    count: list.length,
    sinceResponseMs: stats(list.map((wake) => wake.sinceResponseMs)),
    sinceSentMs: stats(list.map((wake) => wake.sinceSentMs)),
  });
  const figures = {
    benchmark: 'changes-requested',
    at: new Date().toISOString(),
    settings: { rounds: ROUNDS, settleMs: SETTLE_MS, waitS: WAIT_S },
    changesRequested: figure(wakes.changes_requested),
    approvedAfterRevision: figure(wakes['approved after revision']),
    ceiling: figure(wakes.approved),
    ratioP50: 0,
    ratioP99: 0,
  };
  figures.ratioP50 = round(figures.changesRequested.sinceResponseMs.p50 / figures.ceiling.sinceResponseMs.p50, 2);
  figures.ratioP99 = round(figures.changesRequested.sinceResponseMs.p99 / figures.ceiling.sinceResponseMs.p99, 2);

  console.log(`\nLong-poll wake-up, one round at a time, waiting and deciding through two web processes (${ROUNDS} rounds)\n`);
  const row = (name: string, f: ReturnType<typeof figure>) => [
    name,
    f.count,
    f.sinceResponseMs.p50,
    f.sinceResponseMs.p99,
    f.sinceResponseMs.max,
    f.sinceSentMs.p50,
    f.sinceSentMs.p99,
  ];
  console.log(
    formatTable(
      ['decision', 'n', 'after response p50 ms', 'p99 ms', 'max ms', 'after sent p50 ms', 'p99 ms'],
      [
        row('changes_requested', figures.changesRequested),
        row('approved after a revision', figures.approvedAfterRevision),
        row('approved (ceiling)', figures.ceiling),
      ],
    ),
  );
  console.log(`\nchanges_requested vs the ceiling: p50 ${figures.ratioP50}×, p99 ${figures.ratioP99}×`);
  console.log(JSON.stringify(figures));
});
