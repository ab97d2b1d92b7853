// GET /v1/approvals at scale: one organization with 1,000,000 approvals, and the reviewer inbox
// of another with 10,000 pending ones, listed through the web process (compiled, a child).
//
//   npm run bench:listing                                1,000,000 approvals, 500 requests a case
//   BENCH_APPROVALS=200000 BENCH_REQUESTS=200 npm run bench:listing
//   BENCH_KEEP=1 npm run bench:listing                   keep the database, and reuse it next time
//
// The approvals are written in SQL (listing/fill.ts), then VACUUM ANALYZE. Each case is one
// query string of limit=50: no filter, each filter alone, a cursor deep into the list (rotating
// over positions in its second half), one combination, and the inbox's first page of
// status=pending. Requests go one at a time over a kept-alive connection, the cases taking turns
// so that a slow moment of this shared machine hits them all; latency is measured in this
// process, from send to parsed body, and in the web process (the request log's responseTime, read from
// its log). Then each case's SQL, built by ApprovalStore.list itself, is run once under EXPLAIN
// ANALYZE for its plan and database time. Targets: p99 < 20 ms for the 1,000,000-row cases; the
// inbox's first page < 300 ms, on its first request and at p99. The last line of stdout is the
// figures as JSON.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDataLayer, type Database, type Sql } from '../src/data/database.js';
import { approvalListQuerySchema } from '../src/modules/approvals/approval-schemas.js';
import { ApprovalStore } from '../src/modules/approvals/approval-store.js';
import { decodeListCursor, encodeListCursor } from '../src/modules/approvals/list-cursor.js';
import { OrgService } from '../src/modules/orgs/org-service.js';
import { SCOPES } from '../src/modules/orgs/tenant.js';
import { formatTable, round, stats, verdict, type Stats } from './lib/figures.js';
import { BENCH_ACTOR, createOrgs, databaseUrl, deleteRedisKeys, dropDatabase, recreateDatabase, type BenchOrg } from './lib/fixtures.js';
import { expectJson } from './lib/http.js';
import { epochMs, machineCpuMs, processCpuMs } from './lib/proc-stats.js';
import { startWebServer } from './lib/processes.js';
import { envFlag, envInt, log, runBenchmark } from './lib/run.js';
import { ACTIONS, AGENTS, fillApprovals, HISTORY_DAYS, POLICY_KEYS } from './listing/fill.js';

const APPROVALS = envInt('BENCH_APPROVALS', 1_000_000);
const INBOX_PENDING = envInt('BENCH_INBOX_PENDING', 10_000);
const REQUESTS = envInt('BENCH_REQUESTS', 500);
const WARMUP_REQUESTS = envInt('BENCH_WARMUP_REQUESTS', 50);
const KEEP = envFlag('BENCH_KEEP', false);
const LIMIT = 50;
/** Deep-cursor requests rotate over this many positions between half and nearly all of the list. */
const DEEP_POSITIONS = 20;
const DATABASE = 'approval_gate_bench_listing';
const REDIS_PREFIX = 'agbench-listing';
const PORT = 3906;
const TARGET_P99_MS = 20;
const TARGET_INBOX_MS = 300;
/** The names createOrgs gives the two organizations: how a kept database is recognised. */
const ORG_NAMES = ['bench-org-0', 'bench-org-1'];

interface ListingCase {
  name: string;
  org: BenchOrg;
  /** Query strings of GET /v1/approvals (several: requests take them in turn). */
  queries: string[];
  /** Rows the filter matches (before the cursor). */
  matching: number;
  /** `p99`: p99 under TARGET_P99_MS; `inbox`: first request and p99 under TARGET_INBOX_MS; null: shown, no target. */
  target: 'p99' | 'inbox' | null;
}

interface CaseResult {
  name: string;
  query: string;
  matching: number;
  returned: number;
  latencyMs: Stats & { mean: number };
  /** The same requests as the web process timed them (the request log's responseTime, whole ms). */
  serverMs: Stats;
  /** The first request of the case, before any warm-up. */
  firstMs: number;
  /** From EXPLAIN ANALYZE of the case's SQL: the indexes read and the time the database took. */
  plan: { indexes: string[]; executionMs: number; planningMs: number; buffers: { hit: number; read: number } };
  target: ListingCase['target'];
  targetMet: boolean | null;
}

runBenchmark('bench:listing', 45 * 60_000, async (cleanup) => {
  cleanup(async () => {
    if (!KEEP) await dropDatabase(DATABASE);
    const deleted = await deleteRedisKeys(REDIS_PREFIX);
    log(`cleaned up: ${KEEP ? `kept ${DATABASE}` : `dropped ${DATABASE}`}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:*`);
  });
  const { dbUrl, big, inbox } = await prepareDatabase();
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  cleanup(() => client.end());
  const data = createDataLayer(dbUrl, { size: 1, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  cleanup(() => data.close());

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-listing-'));
  cleanup(() => rmSync(tmp, { recursive: true, force: true }));
  const webLog = path.join(tmp, 'web.log');
  const web = await startWebServer({ port: PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX, stdoutFile: webLog });
  cleanup(() => web.stop());
  log(`web pid ${web.pid}`);

  const cases = await listingCases(client, big, inbox);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  cleanup(() => agent.destroy());
  /** `requestId` finds the request in the web process's log. */
  const get = async (c: ListingCase, query: string, requestId?: string) => {
    const sentAt = epochMs();
    const headers = requestId ? { 'x-request-id': requestId } : undefined;
    const body = await expectJson(200, { port: PORT, method: 'GET', path: `/v1/approvals?${query}`, key: c.org.key, agent, headers });
    return { ms: epochMs() - sentAt, body: body as { approvals: { createdAt: string; id: string }[]; nextCursor: string | null } };
  };

  // First requests, cold for their case: what a reviewer opening the inbox after a pause sees.
  const firstMs = new Map<ListingCase, number>();
  const returned = new Map<ListingCase, number>();
  for (const c of cases) {
    const { ms, body } = await get(c, c.queries[0]!);
    firstMs.set(c, ms);
    returned.set(c, body.approvals.length);
    checkPage(c, body.approvals);
  }
  log(`warm-up: ${WARMUP_REQUESTS} requests a case`);
  for (let i = 0; i < WARMUP_REQUESTS; i++) for (const c of cases) await get(c, c.queries[i % c.queries.length]!);
  log(`measuring: ${REQUESTS} requests a case, one at a time, the ${cases.length} cases taking turns`);
  const latencies = new Map<ListingCase, number[]>(cases.map((c) => [c, []]));
  const [machineFrom, webFrom, startedAt] = [machineCpuMs(), processCpuMs(web.pid), epochMs()];
  for (let i = 0; i < REQUESTS; i++) {
    for (const [k, c] of cases.entries()) latencies.get(c)!.push((await get(c, c.queries[i % c.queries.length]!, `bench.${k}.${i}`)).ms);
  }
  const [machineTo, webTo, endedAt] = [machineCpuMs(), processCpuMs(web.pid), epochMs()];
  const cpu = {
    machinePct: round((100 * (machineTo.busy - machineFrom.busy)) / (machineTo.total - machineFrom.total), 0),
    webPct: round((100 * (webTo - webFrom)) / (endedAt - startedAt), 0),
  };
  const serverTimes = serverTimesByCase(webLog, cases.length);

  const results: CaseResult[] = [];
  for (const [k, c] of cases.entries()) {
    const values = latencies.get(c)!;
    const latencyMs = { ...stats(values), mean: round(values.reduce((a, b) => a + b, 0) / values.length) };
    const first = firstMs.get(c)!;
    results.push({
      name: c.name,
      query: c.queries[0]!,
      matching: c.matching,
      returned: returned.get(c)!,
      latencyMs,
      serverMs: stats(serverTimes[k]!),
      firstMs: round(first),
      plan: await explainCase(data.db, client, c),
      target: c.target,
      targetMet:
        c.target === 'p99' ? latencyMs.p99 < TARGET_P99_MS : c.target === 'inbox' ? Math.max(first, latencyMs.p99) < TARGET_INBOX_MS : null,
    });
  }
  printReport(results, cpu);
});

/** responseTime of each measured request (ids `bench.<case>.<i>`) from the web process's request log, by case. */
function serverTimesByCase(webLog: string, caseCount: number): number[][] {
  const byCase = Array.from({ length: caseCount }, () => [] as number[]);
  for (const line of readFileSync(webLog, 'utf8').split('\n')) {
    if (!line.includes('"bench.')) continue;
    const entry = JSON.parse(line) as { req?: { id?: string }; responseTime?: number };
    const match = /^bench\.(\d+)\.\d+$/.exec(entry.req?.id ?? '');
    if (match && entry.responseTime !== undefined) byCase[Number(match[1])]!.push(entry.responseTime);
  }
  return byCase;
}

/** The database with its two organizations, filled (or, with BENCH_KEEP, as a previous run left it). */
async function prepareDatabase(): Promise<{ dbUrl: string; big: BenchOrg; inbox: BenchOrg }> {
  const reused = KEEP ? await reuseDatabase() : undefined;
  if (reused) return reused;
  const dbUrl = await recreateDatabase(DATABASE);
  const [big, inbox] = await createOrgs(dbUrl, 2);
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    await client.query('SELECT setseed(0.8)');
    log(`writing ${APPROVALS} approvals into one organization`);
    const started = performance.now();
    await fillApprovals(client, big!.orgId, APPROVALS);
    log(`writing ${INBOX_PENDING} pending approvals into another (the inbox)`);
    await fillApprovals(client, inbox!.orgId, INBOX_PENDING, true);
    log('VACUUM ANALYZE approvals');
    await client.query('VACUUM ANALYZE approvals');
    log(`database ready in ${round((performance.now() - started) / 1000)} s`);
  } finally {
    await client.end();
  }
  return { dbUrl, big: big!, inbox: inbox! };
}

/** The kept database if it holds the sizes asked for, with a fresh key for each organization. */
async function reuseDatabase(): Promise<{ dbUrl: string; big: BenchOrg; inbox: BenchOrg } | undefined> {
  const dbUrl = databaseUrl(DATABASE);
  const client = new pg.Client({ connectionString: dbUrl });
  try {
    await client.connect();
  } catch {
    return undefined; // not there
  }
  try {
    const { rows } = await client.query<{ id: string; name: string; approvals: string }>(
      `SELECT o.id, o.name, (SELECT count(*) FROM approvals a WHERE a.org_id = o.id) AS approvals
       FROM organizations o WHERE o.name = ANY ($1) ORDER BY o.name`,
      [ORG_NAMES],
    );
    if (rows.length !== 2 || Number(rows[0]!.approvals) !== APPROVALS || Number(rows[1]!.approvals) !== INBOX_PENDING) return undefined;
    const data = createDataLayer(dbUrl, { size: 2, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
    try {
      const orgs = new OrgService(data);
      const [big, inbox] = await Promise.all(
        rows.map(async (row) => ({
          orgId: row.id,
          key: (await orgs.createApiKey({ orgId: row.id, scopes: [...SCOPES], name: 'bench' }, BENCH_ACTOR)).key,
          reviewerKey: (await orgs.createApiKey({ orgId: row.id, scopes: [...SCOPES], name: 'bench reviewer' }, BENCH_ACTOR)).key,
        })),
      );
      log(`reusing ${DATABASE} (BENCH_KEEP=1): ${APPROVALS} + ${INBOX_PENDING} approvals`);
      return { dbUrl, big: big!, inbox: inbox! };
    } finally {
      await data.close();
    }
  } finally {
    await client.end();
  }
}

/** The cases, with the rows each matches; a filter's value is the one a quarter of the way down its frequency ranking. */
async function listingCases(client: pg.Client, big: BenchOrg, inbox: BenchOrg): Promise<ListingCase[]> {
  const count = async (where: string, values: unknown[] = []) =>
    Number(
      (await client.query<{ n: string }>(`SELECT count(*) AS n FROM approvals WHERE org_id = $1 AND ${where}`, [big.orgId, ...values]))
        .rows[0]!.n,
    );
  /** The value of `column` a quarter of the way down the frequency ranking, and its count. */
  const typical = async (column: string) => {
    const { rows } = await client.query<{ value: string; n: string }>(
      `SELECT ${column} AS value, count(*) AS n FROM approvals WHERE org_id = $1 AND ${column} IS NOT NULL GROUP BY 1 ORDER BY 2 DESC`,
      [big.orgId],
    );
    const row = rows[Math.floor(rows.length / 4)]!;
    return { value: row.value, matching: Number(row.n) };
  };
  const action = await typical('action');
  const agent = await typical('agent');
  const policy = await typical('policy_key');
  const day = 86_400_000;
  const windowTo = new Date(Date.now() - 100 * day);
  const windowFrom = new Date(windowTo.getTime() - 7 * day);
  const positions = Array.from({ length: DEEP_POSITIONS }, (_, k) => Math.floor(APPROVALS * (0.5 + (0.49 * k) / (DEEP_POSITIONS - 1))));
  const deepCursors: string[] = [];
  for (const position of positions) {
    const { rows } = await client.query<{ created_at: Date; id: string }>(
      'SELECT created_at, id FROM approvals WHERE org_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1',
      [big.orgId, position],
    );
    deepCursors.push(encodeListCursor({ createdAt: rows[0]!.created_at, id: rows[0]!.id }));
  }
  const combined = { status: 'approved', action: ACTIONS[0]!, agent: AGENTS[0]! };
  const q = (params: Record<string, string>) => new URLSearchParams({ limit: String(LIMIT), ...params }).toString();
  return [
    { name: 'no filter', org: big, queries: [q({})], matching: APPROVALS, target: 'p99' },
    { name: 'status=pending', org: big, queries: [q({ status: 'pending' })], matching: await count(`status = 'pending'`), target: 'p99' },
    {
      name: 'status=approved,rejected',
      org: big,
      queries: [q({ status: 'approved,rejected' })],
      matching: await count(`status IN ('approved', 'rejected')`),
      target: 'p99',
    },
    { name: 'action', org: big, queries: [q({ action: action.value })], matching: action.matching, target: 'p99' },
    { name: 'agent', org: big, queries: [q({ agent: agent.value })], matching: agent.matching, target: 'p99' },
    { name: 'policyKey', org: big, queries: [q({ policyKey: policy.value })], matching: policy.matching, target: 'p99' },
    {
      name: 'from/to (one week)',
      org: big,
      queries: [q({ from: windowFrom.toISOString(), to: windowTo.toISOString() })],
      matching: await count('created_at BETWEEN $2 AND $3', [windowFrom, windowTo]),
      target: 'p99',
    },
    {
      name: `cursor deep (${DEEP_POSITIONS} positions, 50-99%)`,
      org: big,
      queries: deepCursors.map((cursor) => q({ cursor })),
      matching: APPROVALS,
      target: 'p99',
    },
    {
      name: 'status+action+agent (commonest)',
      org: big,
      queries: [q(combined)],
      matching: await count('status = $2 AND action = $3 AND agent = $4', [combined.status, combined.action, combined.agent]),
      target: null,
    },
    {
      name: `inbox: status=pending, ${INBOX_PENDING} pending`,
      org: inbox,
      queries: [q({ status: 'pending' })],
      matching: INBOX_PENDING,
      target: 'inbox',
    },
  ];
}

/** A page that is not newest-first, or not full when it should be, means the figures measure a wrong answer. */
function checkPage(c: ListingCase, approvals: { createdAt: string; id: string }[]): void {
  if (approvals.length !== Math.min(LIMIT, c.matching)) throw new Error(`${c.name}: ${approvals.length} approvals on the first page`);
  for (let i = 1; i < approvals.length; i++) {
    const [a, b] = [approvals[i - 1]!, approvals[i]!];
    if (a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id)) throw new Error(`${c.name}: not newest first`);
  }
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the SQL that ApprovalStore.list builds for the case's first query:
 * the store runs on a Sql that records the statement, which is then explained here.
 */
async function explainCase(db: Database, client: pg.Client, c: ListingCase): Promise<CaseResult['plan']> {
  let statement: { text: string; values: unknown[] } | undefined;
  const recorder: Sql = {
    async query<Row>(_name: string | null, text: string, values: unknown[]) {
      statement = { text, values };
      return [] as Row[];
    },
  };
  const { status, cursor, ...filters } = approvalListQuerySchema.parse(Object.fromEntries(new URLSearchParams(c.queries[0]!)));
  const after = cursor ? decodeListCursor(cursor) : undefined;
  await new ApprovalStore(db, recorder, c.org.orgId).list({
    ...filters,
    ...(status ? { statuses: status } : {}),
    ...(after ? { after } : {}),
  });
  const { rows } = await client.query<{ 'QUERY PLAN': [ExplainedPlan] }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement!.text}`,
    statement!.values,
  );
  const [explained] = rows[0]!['QUERY PLAN'];
  const indexes = new Set<string>();
  const visit = (node: PlanNode) => {
    if (node['Index Name']) indexes.add(`${node['Node Type']} ${node['Index Name']}`);
    else if (node['Node Type'] === 'Seq Scan' || node['Node Type'] === 'Bitmap Heap Scan') indexes.add(node['Node Type']);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(explained.Plan);
  return {
    indexes: [...indexes],
    executionMs: round(explained['Execution Time'], 2),
    planningMs: round(explained['Planning Time'], 2),
    buffers: { hit: explained.Plan['Shared Hit Blocks'] ?? 0, read: explained.Plan['Shared Read Blocks'] ?? 0 },
  };
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

interface ExplainedPlan {
  Plan: PlanNode;
  'Planning Time': number;
  'Execution Time': number;
}

function printReport(results: CaseResult[], cpu: { machinePct: number; webPct: number }): void {
  console.log(
    `\nGET /v1/approvals?limit=${LIMIT}: one organization with ${APPROVALS} approvals over ${HISTORY_DAYS} days ` +
      `(${ACTIONS.length} actions, ${AGENTS.length} agents, ${POLICY_KEYS.length} policies, spread unevenly), and an inbox of ${INBOX_PENDING} pending;`,
  );
  console.log(
    `${REQUESTS} requests a case after ${WARMUP_REQUESTS} of warm-up, one at a time, cases in turn; ms from send to parsed body, in this process. ` +
      `"first": the case's first request, before warm-up; server: the request log's responseTime in the web process (whole ms);\n` +
      `db: EXPLAIN ANALYZE of the same SQL, once, after the run. While measuring, the web process used ${cpu.webPct}% of a core ` +
      `and the machine ${cpu.machinePct}% of all ${os.cpus().length} cores (this bench, PostgreSQL and anyone else).\n`,
  );
  console.log(
    formatTable(
      ['case', 'matching', 'page', 'first', 'p50', 'p99', 'max', 'mean', 'server p50/p99/max', 'db ms', 'target'],
      results.map((r) => [
        r.name,
        r.matching,
        r.returned,
        r.firstMs,
        r.latencyMs.p50,
        r.latencyMs.p99,
        r.latencyMs.max,
        r.latencyMs.mean,
        `${r.serverMs.p50} / ${r.serverMs.p99} / ${r.serverMs.max}`,
        r.plan.executionMs,
        r.targetMet === null ? '' : verdict(r.targetMet),
      ]),
    ),
  );
  console.log('\nPlans (what each case reads):');
  for (const r of results) {
    const { indexes, planningMs, buffers } = r.plan;
    console.log(
      `  ${r.name}: ${indexes.join(' + ')}; ${buffers.hit + buffers.read} pages (${buffers.read} not in shared buffers); planning ${planningMs} ms`,
    );
  }
  console.log('\nQueries:');
  for (const r of results) console.log(`  ${r.name}: ?${r.query.length > 120 ? `${r.query.slice(0, 117)}...` : r.query}`);

  const listed = results.filter((r) => r.target === 'p99');
  const inbox = results.find((r) => r.target === 'inbox')!;
  const allListed = listed.every((r) => r.targetMet);
  console.log(`\nTargets:`);
  console.log(
    `  ${verdict(allListed)}: p99 < ${TARGET_P99_MS} ms for every ${APPROVALS}-approval case with a target` +
      (allListed
        ? ''
        : ` (missed: ${listed
            .filter((r) => !r.targetMet)
            .map((r) => `${r.name} ${r.latencyMs.p99} ms`)
            .join(', ')})`),
  );
  console.log(
    `  ${verdict(inbox.targetMet!)}: inbox first page: first request ${inbox.firstMs} ms, then p99 ${inbox.latencyMs.p99} ms; target < ${TARGET_INBOX_MS} ms`,
  );
  console.log(
    JSON.stringify({
      benchmark: 'listing',
      at: new Date().toISOString(),
      settings: { approvals: APPROVALS, inboxPending: INBOX_PENDING, requests: REQUESTS, warmupRequests: WARMUP_REQUESTS, limit: LIMIT },
      cpu,
      cases: results,
      targets: { p99Under20Ms: allListed, inboxFirstPageUnder300Ms: inbox.targetMet },
    }),
  );
}
