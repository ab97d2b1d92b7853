// What ag_write_batch costs PostgreSQL per creation, without HTTP or Node in the way: batches
// of creations (pending, one event each; auto-approved, two) of one organization or spread over
// several, written one after another by one session, with the backend's CPU time per creation
// and, from pg_stat_user_functions, the time spent in each of our SQL functions.
//
//   npm run bench:create-approvals-sql
//   BENCH_BATCHES=300 BENCH_BATCH_SIZE=50 npm run bench:create-approvals-sql
import pg from 'pg';
import { formatTable, median, round } from './lib/figures.js';
import { createOrgs, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import { processCpuMs } from './lib/proc-stats.js';
import { envInt, log, runBenchmark } from './lib/run.js';
import { createApproval } from '../src/modules/approvals/approval-transitions.js';
import { creationItem } from '../src/modules/approvals/approval-writes.js';
import { policyDocumentSchema, type PolicyOutcome } from '../src/modules/policies/policy-schemas.js';

const DATABASE = 'approval_gate_bench_sql';
const BATCHES = envInt('BENCH_BATCHES', 150);
const BATCH_SIZE = envInt('BENCH_BATCH_SIZE', 30);
const ROUNDS = envInt('BENCH_RUNS', 3);
const SPREADS = [1, 30];

/** A creation as ApprovalWrites hands it to ag_write_batch, under a policy whose default is `outcome`. */
function creation(orgId: string, outcome: PolicyOutcome) {
  const actor = { type: 'api_key' as const, id: orgId };
  const created = createApproval(
    { action: 'refund', payload: { amount: 5000, currency: 'EUR' }, policyKey: 'bench', agent: 'bench-agent' },
    {
      kind: 'policy',
      policy: policyDocumentSchema.parse({ defaultOutcome: outcome }),
      verdict: { outcome, matchedRule: null },
      policyRevision: null,
    },
    { actor, requester: actor },
    new Date(),
  );
  return creationItem(orgId, created, null);
}

runBenchmark('bench:create-approvals-sql', 30 * 60_000, async (cleanup) => {
  cleanup(() => dropDatabase(DATABASE));
  const dbUrl = await recreateDatabase(DATABASE);
  const orgs = await createOrgs(dbUrl, Math.max(...SPREADS));
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  cleanup(() => client.end());
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = rows[0]!.pid;
  await client.query("SET track_functions = 'all'");

  const figures = new Map<string, { wallUs: number[]; cpuUs: number[] }>();
  for (let pass = 1; pass <= ROUNDS; pass++) {
    for (const outcome of ['review', 'allow'] as const) {
      for (const spread of SPREADS) {
        const name = `${outcome === 'review' ? 'pending' : 'auto-approved'}, ${spread} org${spread > 1 ? 's' : ''}`;
        const batches = Array.from({ length: BATCHES }, (_, b) =>
          JSON.stringify(Array.from({ length: BATCH_SIZE }, (_, i) => creation(orgs[(b * BATCH_SIZE + i) % spread]!.orgId, outcome))),
        );
        const cpuBefore = processCpuMs(backend);
        const startedAt = performance.now();
        for (const batch of batches) {
          const { rows: answered } = await client.query<{ outcomes: string[] }>("SELECT ag_write_batch('create', $1::jsonb) AS outcomes", [
            batch,
          ]);
          const failed = answered[0]!.outcomes.find((outcome) => outcome !== 'created');
          if (failed) throw new Error(`${name}: a creation was answered ${failed}`);
        }
        const creations = BATCHES * BATCH_SIZE;
        const entry = figures.get(name) ?? { wallUs: [], cpuUs: [] };
        entry.wallUs.push(((performance.now() - startedAt) * 1000) / creations);
        entry.cpuUs.push(((processCpuMs(backend) - cpuBefore) * 1000) / creations);
        figures.set(name, entry);
        log(`round ${pass}: ${name}: ${round(entry.cpuUs.at(-1)!, 0)} µs backend CPU per creation`);
      }
    }
  }

  // Statistics reach pg_stat_user_functions when the session reports them (at most once a second).
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const { rows: functions } = await client.query<{ funcname: string; calls: string; self_ms: number; total_ms: number }>(
    'SELECT funcname, calls, self_time AS self_ms, total_time AS total_ms FROM pg_stat_user_functions ORDER BY self_time DESC',
  );
  console.log(`\nag_write_batch('create'), ${BATCHES} batches of ${BATCH_SIZE} per scenario, median of ${ROUNDS} round(s)\n`);
  console.log(
    formatTable(
      ['scenario', 'µs wall per creation', 'µs backend CPU per creation'],
      [...figures].map(([name, { wallUs, cpuUs }]) => [name, String(round(median(wallUs), 0)), String(round(median(cpuUs), 0))]),
    ),
  );
  console.log('\nTime in each function over all rounds (self: not counting the functions it called)\n');
  console.log(
    formatTable(
      ['function', 'calls', 'self ms', 'total ms'],
      functions.map((f) => [f.funcname, f.calls, String(round(f.self_ms, 0)), String(round(f.total_ms, 0))]),
    ),
  );
});
