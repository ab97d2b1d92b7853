// What the audit log's Merkle tree (docs/receipts.md) costs and how fast its proofs are, over one
// organization's chain of BENCH_AUDIT_EVENTS synthetic events appended in SQL:
//  1. catching the tree up over the whole chain (what the checkpoint job does a thousand events at a time);
//  2. inclusion proofs of random events and consistency proofs between random sizes in the
//     full-size tree, each built as the endpoints build them (AuditTree), one after another;
//  3. the storage the tree adds per event, against the events' own.
//
//   npm run bench:proofs                          1,000,000 events, 500 proofs of each kind
//   BENCH_AUDIT_EVENTS=100000 BENCH_PROOFS=200 npm run bench:proofs
//
// The last line of stdout is the figures as JSON.
import { performance } from 'node:perf_hooks';
import { createDataLayer } from '../src/data/database.js';
import { AuditTree } from '../src/modules/audit/audit-tree.js';
import { appendSyntheticAuditEvents } from '../src/modules/audit/synthetic-audit-events.js';
import { formatTable, median, percentile, round } from './lib/figures.js';
import { createOrgs, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const EVENTS = envInt('BENCH_AUDIT_EVENTS', 1_000_000);
const PROOFS = envInt('BENCH_PROOFS', 500);
const DATABASE = 'approval_gate_bench_proofs';

async function timeEach(work: () => Promise<unknown>): Promise<number[]> {
  const durations: number[] = [];
  for (let i = 0; i < PROOFS; i++) {
    const started = performance.now();
    await work();
    durations.push(performance.now() - started);
  }
  return durations;
}

runBenchmark('bench:proofs', 60 * 60_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    log(`cleaned up: dropped ${DATABASE}`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [org] = await createOrgs(dbUrl, 1);
  const data = createDataLayer(dbUrl, { size: 2, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  cleanup(() => data.close());
  const tree = new AuditTree(data);

  log(`appending ${EVENTS.toLocaleString('en-US')} events in SQL ...`);
  await appendSyntheticAuditEvents(data.sql, org!.orgId, EVENTS);
  await data.sql.query(null, 'DELETE FROM outbox_messages WHERE org_id = $1', [org!.orgId]);

  log('catching the tree up over the whole chain ...');
  const started = performance.now();
  // The organization's own setup events come first: the chain is a little longer than EVENTS.
  const size = await tree.catchUp(org!.orgId);
  const catchUpSeconds = (performance.now() - started) / 1000;
  if (size < EVENTS) throw new Error(`the tree covers ${size} of at least ${EVENTS} events`);
  const randomSize = () => 1 + Math.floor(Math.random() * size);
  await data.db.$executeRawUnsafe('VACUUM ANALYZE audit_events, audit_tree_nodes');

  log(`${PROOFS} inclusion and ${PROOFS} consistency proofs in the tree of ${size.toLocaleString('en-US')} ...`);
  const inclusion = await timeEach(() => tree.inclusion(org!.orgId, randomSize(), size));
  const consistency = await timeEach(() => {
    const [a, b] = [randomSize(), randomSize()].sort((x, y) => x - y);
    return tree.consistency(org!.orgId, a!, b!);
  });

  const [sizes] = await data.sql.query<{ nodes: string; events: string }>(
    null,
    `SELECT pg_total_relation_size('audit_tree_nodes')::text AS nodes, pg_total_relation_size('audit_events')::text AS events`,
    [],
  );
  const figures = {
    events: size,
    catchUpEventsPerSecond: round(size / catchUpSeconds, 0),
    inclusionMs: { p50: round(median(inclusion), 2), p99: round(percentile(inclusion, 99), 2) },
    consistencyMs: { p50: round(median(consistency), 2), p99: round(percentile(consistency, 99), 2) },
    treeBytesPerEvent: round(Number(sizes!.nodes) / size, 1),
    eventBytesPerEvent: round(Number(sizes!.events) / size, 1),
  };
  console.log(
    formatTable(
      ['what', 'figure'],
      [
        ['tree catch-up', `${figures.catchUpEventsPerSecond.toLocaleString('en-US')} events/s`],
        ['inclusion proof (p50 / p99)', `${figures.inclusionMs.p50} / ${figures.inclusionMs.p99} ms`],
        ['consistency proof (p50 / p99)', `${figures.consistencyMs.p50} / ${figures.consistencyMs.p99} ms`],
        ['tree storage per event', `${figures.treeBytesPerEvent} B (the events: ${figures.eventBytesPerEvent} B)`],
      ],
    ),
  );
  console.log(JSON.stringify(figures));
});
