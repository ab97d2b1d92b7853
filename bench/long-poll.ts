// 10,000 long-polls held by one web process: its memory while they wait, and how soon each
// waiter hears of its approval's decision.
//
//   npm run bench:long-poll
//
// Creates the pending approvals through a second web process (so the measured one holds only the
// waits, not what creating 10,000 approvals left in its heap), holds one `GET /v1/approvals/:id?wait=30` per approval open at
// once, samples the web process's RSS, then decides every approval (100 at a time) and times each
// waiter's answer from the moment its decision's response arrived. A waiter whose 30 s wait runs
// out before its decision polls again, as a client would; such re-polls are counted. The last line
// of stdout is the figures as JSON. BENCH_HEAP_SNAPSHOT=1 also writes a heap snapshot of the
// waiting process while the waiters are held (into bench/.heap/) and prints its largest shares by
// constructor: what each layer keeps per waiter. Writing it stops the process for tens of seconds,
// so that run's answer times (and re-polls) do not count.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { mapConcurrent } from './lib/concurrency.js';
import { formatTable, round, stats, verdict } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase, type BenchOrg } from './lib/fixtures.js';
import { heapSnapshotNodeOptions, snapshotHeap } from './lib/heap-snapshot.js';
import { expectJson, putPolicy, requestJson } from './lib/http.js';
import { readOpenFilesLimit, readRssMb, readRssSharesMb, waitUntilIdle } from './lib/proc-stats.js';
import { startWebServer } from './lib/processes.js';
import { envFlag, envInt, log, runBenchmark } from './lib/run.js';

const WAITERS = envInt('BENCH_WAITERS', 10_000);
const ORG_COUNT = 10;
const WAIT_S = 30;
const CREATE_CONCURRENCY = 50;
const DECIDE_CONCURRENCY = 100;
/** Waiters are opened in batches, each written out before the next starts, to spare the listen backlog. */
const OPEN_BATCH = 500;
const DATABASE = 'approval_gate_bench_longpoll';
const REDIS_PREFIX = 'agbench-longpoll';
const PORT = 3903;
const CREATOR_PORT = 3907;
const HEAP_SNAPSHOT = envFlag('BENCH_HEAP_SNAPSHOT', false);
const HEAP_DIR = 'bench/.heap';
const TARGET_RSS_MB = 300;
const TARGET_ANSWER_MS = 2000;
/** Sockets beyond the waiters: database pool, Redis, decisions, files. */
const SPARE_FILES = 500;

interface Approval {
  id: string;
  org: BenchOrg;
  verdict: 'approved' | 'rejected';
}

interface WaiterOutcome {
  answeredAt?: number;
  status?: string;
  polls: number;
  error?: string;
}

runBenchmark('bench:long-poll', 15 * 60_000, async (cleanup) => {
  const ownLimit = readOpenFilesLimit('self');
  if (ownLimit < WAITERS + SPARE_FILES) {
    throw new Error(
      `this process may open ${ownLimit} files, fewer than the ${WAITERS} waiters need; run \`ulimit -n 65536\` (or up to \`ulimit -Hn\`) in the shell first`,
    );
  }
  cleanup(async () => {
    await dropDatabase(DATABASE);
    const deleted = await deleteRedisKeys(REDIS_PREFIX);
    log(`cleaned up: dropped ${DATABASE}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:*`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const orgs = await createOrgs(dbUrl, ORG_COUNT);
  const creator = await startWebServer({ port: CREATOR_PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX });
  cleanup(() => creator.stop());
  const api = await startWebServer({
    port: PORT,
    databaseUrl: dbUrl,
    redisPrefix: REDIS_PREFIX,
    ...(HEAP_SNAPSHOT ? { env: { NODE_OPTIONS: heapSnapshotNodeOptions(HEAP_DIR) } } : {}),
  });
  cleanup(() => api.stop());
  const serverLimit = readOpenFilesLimit(api.pid);
  if (serverLimit < WAITERS + SPARE_FILES) throw new Error(`the web process may open only ${serverLimit} files`);
  log(`web process pid ${api.pid} up (open-files limit ${serverLimit}); RSS ${round(readRssMb(api.pid))} MB`);
  await Promise.all(orgs.map((org) => putPolicy(CREATOR_PORT, org.key, 'bench-review', { defaultOutcome: 'review' })));

  // 1. The pending approvals, spread over the organizations, created by the other web process.
  const createAgent = new http.Agent({ keepAlive: true, maxSockets: CREATE_CONCURRENCY });
  let started = performance.now();
  const approvals: Approval[] = await mapConcurrent(
    Array.from({ length: WAITERS }, (_, i) => i),
    CREATE_CONCURRENCY,
    async (i) => {
      const org = orgs[i % orgs.length]!;
      const body = { action: 'refund', payload: { amount: 5000, currency: 'EUR' }, policyKey: 'bench-review', agent: 'bench-agent' };
      const created = await expectJson(201, {
        port: CREATOR_PORT,
        method: 'POST',
        path: '/v1/approvals',
        key: org.key,
        body,
        agent: createAgent,
      });
      if (created.status !== 'pending') throw new Error(`approval ${created.id} was created ${created.status}, not pending`);
      return { id: created.id as string, org, verdict: i % 2 === 0 ? 'approved' : 'rejected' };
    },
  );
  const createS = (performance.now() - started) / 1000;
  createAgent.destroy();
  log(`created ${WAITERS} pending approvals in ${round(createS)} s (${round(WAITERS / createS, 0)}/s)`);
  await creator.stop();
  await waitUntilIdle(api.pid);
  const rssIdleMb = readRssMb(api.pid);

  // 2. One long-poll per approval, all open at once.
  const waitAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  let decisionsStarted = false;
  let answeredBeforeDecisions = 0;
  const waitFor = async (approval: Approval, onSent: () => void): Promise<WaiterOutcome> => {
    for (let poll = 1; poll <= 3; poll++) {
      try {
        const response = await requestJson({
          port: PORT,
          method: 'GET',
          path: `/v1/approvals/${approval.id}?wait=${WAIT_S}`,
          key: approval.org.key,
          agent: waitAgent,
          timeoutMs: (WAIT_S + 15) * 1000,
          onSent: poll === 1 ? onSent : undefined,
        });
        const answeredAt = performance.now();
        if (!decisionsStarted) answeredBeforeDecisions++;
        if (response.status !== 200) return { polls: poll, error: `HTTP ${response.status}: ${JSON.stringify(response.body)}` };
        const status = (response.body as { status: string }).status;
        if (status !== 'pending') return { answeredAt, status, polls: poll };
      } catch (error) {
        if (poll === 1) onSent(); // never sent: do not hold up the opening
        return { polls: poll, error: String(error) };
      }
    }
    return { polls: 3, error: 'still pending after 3 waits' };
  };

  started = performance.now();
  const waiters: Promise<WaiterOutcome>[] = [];
  for (let from = 0; from < WAITERS; from += OPEN_BATCH) {
    const sent = approvals.slice(from, from + OPEN_BATCH).map((approval) => {
      let markSent!: () => void;
      const written = new Promise<void>((resolve) => (markSent = resolve));
      waiters.push(waitFor(approval, markSent));
      return written;
    });
    await Promise.all(sent);
  }
  const openS = (performance.now() - started) / 1000;
  log(`${WAITERS} long-polls written in ${round(openS)} s; waiting for the web process to go idle`);
  await waitUntilIdle(api.pid, { timeoutMs: 20_000 });
  await sleep(1000);
  const heldForS = (performance.now() - started) / 1000;
  const rssHeldMb = readRssMb(api.pid);
  const rssHeldShares = readRssSharesMb(api.pid);
  const heap = HEAP_SNAPSHOT ? await snapshotHeap(api.pid, HEAP_DIR) : undefined;
  if (answeredBeforeDecisions > 0) log(`!!! ${answeredBeforeDecisions} long-polls answered before any decision: not all were held`);
  log(
    `all written, web process idle, ${answeredBeforeDecisions} answered so far; RSS ${round(rssHeldMb)} MB (${round(rssIdleMb)} MB before)`,
  );

  // 3. Decide every approval, in the order the waiters were opened.
  const decideAgent = new http.Agent({ keepAlive: true, maxSockets: DECIDE_CONCURRENCY });
  const decisionSentAt = new Array<number>(WAITERS);
  const decisionDoneAt = new Array<number>(WAITERS);
  decisionsStarted = true;
  started = performance.now();
  await mapConcurrent(approvals, DECIDE_CONCURRENCY, async (approval, i) => {
    decisionSentAt[i] = performance.now();
    const decided = await expectJson(200, {
      port: PORT,
      method: 'POST',
      path: `/v1/approvals/${approval.id}/decision`,
      key: approval.org.reviewerKey,
      body: { verdict: approval.verdict },
      agent: decideAgent,
    });
    decisionDoneAt[i] = performance.now();
    if (decided.status !== approval.verdict) throw new Error(`decision of ${approval.id} answered ${decided.status}`);
  });
  const decideS = (performance.now() - started) / 1000;
  log(`decided ${WAITERS} approvals in ${round(decideS)} s (${round(WAITERS / decideS, 0)}/s); collecting the waiters`);

  const timedOut = Symbol('timed out');
  const outcomes = await Promise.race([Promise.all(waiters), sleep((WAIT_S + 20) * 1000, timedOut)]);
  if (outcomes === timedOut) throw new Error(`waiters still open ${WAIT_S + 20} s after the last decision`);
  const rssAfterMb = readRssMb(api.pid);
  waitAgent.destroy();
  decideAgent.destroy();

  // 4. Figures.
  const errors = outcomes.filter((o) => o.error);
  const wrongStatus = outcomes.filter((o, i) => !o.error && o.status !== approvals[i]!.verdict);
  const answered = outcomes.flatMap((o, i) => (o.error || o.answeredAt === undefined ? [] : [{ ...o, i, answeredAt: o.answeredAt }]));
  const sinceDecided = answered.map((o) => o.answeredAt - decisionDoneAt[o.i]!);
  const sinceSent = answered.map((o) => o.answeredAt - decisionSentAt[o.i]!);
  const decisionLatency = approvals.map((_, i) => decisionDoneAt[i]! - decisionSentAt[i]!);
  const within = sinceDecided.filter((ms) => ms <= TARGET_ANSWER_MS).length;
  const figures = {
    benchmark: 'long-poll',
    at: new Date().toISOString(),
    settings: { waiters: WAITERS, orgs: ORG_COUNT, waitS: WAIT_S, decideConcurrency: DECIDE_CONCURRENCY },
    createPerS: round(WAITERS / createS, 0),
    openS: round(openS),
    heldAfterS: round(heldForS),
    answeredBeforeDecisions,
    rssMb: {
      beforeWaiters: round(rssIdleMb),
      withWaitersHeld: round(rssHeldMb),
      withWaitersHeldFile: round(rssHeldShares.file),
      withWaitersHeldAnon: round(rssHeldShares.anon),
      afterAnswers: round(rssAfterMb),
    },
    heldKbPerWaiter: round(((rssHeldMb - rssIdleMb) * 1024) / WAITERS),
    ...(heap ? { heapSnapshotMb: round(heap.totalBytes / 2 ** 20) } : {}),
    decisions: { seconds: round(decideS), perS: round(WAITERS / decideS, 0), latencyMs: stats(decisionLatency) },
    answers: {
      answered: answered.length,
      wrongStatus: wrongStatus.length,
      errors: errors.length,
      repolled: outcomes.filter((o) => o.polls > 1).length,
      answeredBeforeDecisionResponse: sinceDecided.filter((ms) => ms < 0).length,
      withinTargetMs: within,
      sinceDecisionCompletedMs: stats(sinceDecided),
      sinceDecisionSentMs: stats(sinceSent),
    },
    targets: {
      rssUnder300Mb: rssHeldMb < TARGET_RSS_MB,
      allAnsweredWithin2s: within === WAITERS && errors.length === 0 && wrongStatus.length === 0,
    },
  };

  const a = figures.answers;
  console.log(
    `\n${WAITERS} long-polls (wait=${WAIT_S}) over ${ORG_COUNT} orgs on one web process; decisions ${DECIDE_CONCURRENCY} at a time\n`,
  );
  console.log(
    formatTable(
      ['figure', 'value'],
      [
        ['web RSS before waiters (MB)', figures.rssMb.beforeWaiters],
        ['web RSS with all waiters held (MB)', figures.rssMb.withWaitersHeld],
        ['  of it mapped files: Node, ICU data, libraries (MB)', figures.rssMb.withWaitersHeldFile],
        ["  of it the process's own: heap, buffers (MB)", figures.rssMb.withWaitersHeldAnon],
        ['web RSS after all answered (MB)', figures.rssMb.afterAnswers],
        ['RSS held per waiter (KB)', figures.heldKbPerWaiter],
        ['long-polls written in (s)', figures.openS],
        ['answered before any decision', answeredBeforeDecisions],
        ['decisions: total time (s)', figures.decisions.seconds],
        ['decisions: per second', figures.decisions.perS],
        ['decision response p50 / p99 (ms)', `${figures.decisions.latencyMs.p50} / ${figures.decisions.latencyMs.p99}`],
        ['answer after decision response p50 (ms)', a.sinceDecisionCompletedMs.p50],
        ['answer after decision response p99 (ms)', a.sinceDecisionCompletedMs.p99],
        ['answer after decision response max (ms)', a.sinceDecisionCompletedMs.max],
        ['answer after decision response min (ms)', a.sinceDecisionCompletedMs.min],
        ['answered before own decision response', a.answeredBeforeDecisionResponse],
        [
          'answer after decision sent p50 / p99 / max (ms)',
          `${a.sinceDecisionSentMs.p50} / ${a.sinceDecisionSentMs.p99} / ${a.sinceDecisionSentMs.max}`,
        ],
        [`answered within ${TARGET_ANSWER_MS} ms of decision`, `${within} / ${WAITERS}`],
        ['waiters that re-polled (30 s wait ran out)', a.repolled],
        ['answers with a wrong status', a.wrongStatus],
        ['waiter errors', a.errors],
      ],
    ),
  );
  if (heap) {
    const perWaiter = (bytes: number) => round(bytes / WAITERS, 0);
    console.log(`\nHeap snapshot with the waiters held: ${round(heap.totalBytes / 2 ** 20)} MB; its largest shares:\n`);
    console.log(
      formatTable(
        ['kind', 'count', 'MB', 'bytes per waiter'],
        heap.shares.slice(0, 30).map((share) => [share.kind, share.count, round(share.bytes / 2 ** 20), perWaiter(share.bytes)]),
      ),
    );
  }
  for (const problem of [...errors.slice(0, 5).map((o) => o.error), ...wrongStatus.slice(0, 5).map((o) => `wrong status ${o.status}`)]) {
    console.log(`!!! ${problem}`);
  }
  console.log(
    `\nTargets: RSS under ${TARGET_RSS_MB} MB with waiters held: ${verdict(figures.targets.rssUnder300Mb)}; ` +
      `all answered within ${TARGET_ANSWER_MS / 1000} s with the decided status: ${verdict(figures.targets.allAnsweredWithin2s)}`,
  );
  console.log(JSON.stringify(figures));
});
