// What ag_write_batch costs PostgreSQL per item, without HTTP or Node in the way: batches of
// creations (pending, one event each; auto-approved, two) and of deciding votes (each settles a
// pending approval: one event), of one organization or spread over several, written one after
// another by one session, with the backend's CPU time per item and, from
// pg_stat_user_functions, the time spent in each of our SQL functions per kind of write.
//
//   npm run bench:write-batch-sql
//   BENCH_BATCHES=300 BENCH_BATCH_SIZE=50 npm run bench:write-batch-sql
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { formatTable, median, round } from './lib/figures.js';
import { createOrgs, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import { processCpuMs } from './lib/proc-stats.js';
import { envInt, log, runBenchmark } from './lib/run.js';
import { createApproval, voteOn } from '../src/modules/approvals/approval-transitions.js';
import type { Creation } from '../src/modules/approvals/approval-types.js';
import { creationItem, voteItem } from '../src/modules/approvals/approval-writes.js';
import { policyDocumentSchema, type PolicyOutcome } from '../src/modules/policies/policy-schemas.js';

const DATABASE = 'approval_gate_bench_sql';
const BATCHES = envInt('BENCH_BATCHES', 150);
const BATCH_SIZE = envInt('BENCH_BATCH_SIZE', 30);
const ROUNDS = envInt('BENCH_RUNS', 3);
const SPREADS = [1, 30];

/** A creation as ApprovalService builds it, under a policy whose default is `outcome`. */
function creation(orgId: string, outcome: PolicyOutcome): Creation {
  const actor = { type: 'api_key' as const, id: orgId };
  return createApproval(
    { action: 'refund', payload: { amount: 5000, currency: 'EUR' }, policyKey: 'bench', agent: 'bench-agent' },
    {
      kind: 'policy',
      policy: policyDocumentSchema.parse({ defaultOutcome: outcome }),
      verdict: { outcome, matchedRule: null },
      shadow: null,
      policyRevision: null,
      policyVersion: null,
    },
    { actor, requester: actor },
    new Date(),
  );
}

/** A reviewer key's approving vote on a pending approval, which settles it (quorum 1). */
function decidingVote(orgId: string, { approval }: Creation) {
  const reviewer = { type: 'api_key' as const, id: randomUUID() };
  const { vote, recorded, settling } = voteOn({ ...approval, orgId }, { verdict: 'approved' }, reviewer, new Date());
  return voteItem(orgId, approval.id, reviewer, 'api', vote, recorded, settling);
}

interface Workload {
  kind: 'create' | 'vote';
  /** What every item is answered. */
  expected: string;
  /** The batches of one round over `orgIds`, as ag_write_batch takes them; `setUp` is written first, untimed. */
  batches(orgIds: string[]): { setUp: unknown[][]; timed: unknown[][] };
}

const WORKLOADS: Record<string, Workload> = {
  'create pending': {
    kind: 'create',
    expected: 'created',
    batches: (orgIds) => ({ setUp: [], timed: batchesOf(orgIds, (orgId) => creationItem(orgId, creation(orgId, 'review'), null)) }),
  },
  'create auto-approved': {
    kind: 'create',
    expected: 'created',
    batches: (orgIds) => ({ setUp: [], timed: batchesOf(orgIds, (orgId) => creationItem(orgId, creation(orgId, 'allow'), null)) }),
  },
  'deciding vote': {
    kind: 'vote',
    expected: 'settled',
    batches: (orgIds) => {
      const pending = batchesOf(orgIds, (orgId) => ({ orgId, creation: creation(orgId, 'review') }));
      return {
        setUp: pending.map((batch) => batch.map(({ orgId, creation }) => creationItem(orgId, creation, null))),
        timed: pending.map((batch) => batch.map(({ orgId, creation }) => decidingVote(orgId, creation))),
      };
    },
  },
};

/** BATCHES batches of BATCH_SIZE items, the organizations taking turns. */
function batchesOf<Item>(orgIds: string[], item: (orgId: string) => Item): Item[][] {
  return Array.from({ length: BATCHES }, (_, b) =>
    Array.from({ length: BATCH_SIZE }, (_, i) => item(orgIds[(b * BATCH_SIZE + i) % orgIds.length]!)),
  );
}

interface FunctionTime {
  funcname: string;
  calls: number;
  self_ms: number;
  total_ms: number;
}

runBenchmark('bench:write-batch-sql', 30 * 60_000, async (cleanup) => {
  cleanup(() => dropDatabase(DATABASE));
  const dbUrl = await recreateDatabase(DATABASE);
  const orgIds = (await createOrgs(dbUrl, Math.max(...SPREADS))).map((org) => org.orgId);
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  cleanup(() => client.end());
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = rows[0]!.pid;
  await client.query("SET track_functions = 'all'");

  const write = async (kind: Workload['kind'], batch: unknown[], expected: string) => {
    const { rows: answered } = await client.query<{ outcomes: string[] }>('SELECT ag_write_batch($1, $2::jsonb) AS outcomes', [
      kind,
      JSON.stringify(batch),
    ]);
    const unexpected = answered[0]!.outcomes.find((outcome) => outcome !== expected);
    if (unexpected) throw new Error(`ag_write_batch('${kind}') answered ${unexpected}`);
  };
  // A session reports its function statistics when idle, at most once a second unless told to.
  const functionTimes = async () => {
    await client.query('SELECT pg_stat_force_next_flush()');
    const { rows: times } = await client.query<FunctionTime>(
      'SELECT funcname, calls::int, self_time AS self_ms, total_time AS total_ms FROM pg_stat_user_functions',
    );
    return new Map(times.map((time) => [time.funcname, time]));
  };

  const figures: string[][] = [];
  const functionTables: string[] = [];
  for (const [name, workload] of Object.entries(WORKLOADS)) {
    const rounds = SPREADS.flatMap((spread) =>
      Array.from({ length: ROUNDS }, () => ({ spread, ...workload.batches(orgIds.slice(0, spread)) })),
    );
    for (const { setUp } of rounds) for (const batch of setUp) await write('create', batch, 'created');
    const before = await functionTimes();

    const cpuUs = new Map<number, number[]>(SPREADS.map((spread) => [spread, []]));
    const wallUs = new Map<number, number[]>(SPREADS.map((spread) => [spread, []]));
    for (const { spread, timed } of rounds) {
      const cpuBefore = processCpuMs(backend);
      const startedAt = performance.now();
      for (const batch of timed) await write(workload.kind, batch, workload.expected);
      const items = timed.length * BATCH_SIZE;
      wallUs.get(spread)!.push(((performance.now() - startedAt) * 1000) / items);
      cpuUs.get(spread)!.push(((processCpuMs(backend) - cpuBefore) * 1000) / items);
      log(`${name}, ${spread} org(s): ${round(cpuUs.get(spread)!.at(-1)!, 0)} µs backend CPU per item`);
    }
    for (const spread of SPREADS) {
      const orgs = `${spread} org${spread > 1 ? 's' : ''}`;
      figures.push([`${name}, ${orgs}`, String(round(median(wallUs.get(spread)!), 0)), String(round(median(cpuUs.get(spread)!), 0))]);
    }

    const after = await functionTimes();
    const items = rounds.length * BATCHES * BATCH_SIZE;
    const spent = [...after.values()]
      .map((time) => {
        const earlier = before.get(time.funcname);
        return {
          ...time,
          calls: time.calls - (earlier?.calls ?? 0),
          self_ms: time.self_ms - (earlier?.self_ms ?? 0),
          total_ms: time.total_ms - (earlier?.total_ms ?? 0),
        };
      })
      .filter((time) => time.calls > 0)
      .sort((a, b) => b.self_ms - a.self_ms);
    functionTables.push(
      `${name} (${items} items over all rounds; self: not counting the functions it called)\n\n` +
        formatTable(
          ['function', 'calls', 'self µs per item', 'total µs per item'],
          spent.map((f) => [
            f.funcname,
            String(f.calls),
            String(round((f.self_ms * 1000) / items, 1)),
            String(round((f.total_ms * 1000) / items, 1)),
          ]),
        ),
    );
  }

  console.log(`\nag_write_batch, ${BATCHES} batches of ${BATCH_SIZE} per round, median of ${ROUNDS} round(s)\n`);
  console.log(formatTable(['workload', 'µs wall per item', 'µs backend CPU per item'], figures));
  for (const table of functionTables) console.log(`\n${table}`);
});
