// Listing and audit reads with and without a read replica (DATABASE_READ_URL), under the same
// write load: a PostgreSQL 15 primary and a streaming replica of the bench's own (initdb and
// pg_basebackup -R, as test/read-replica.test.ts makes them), one web process (src/server.ts
// under tsx), creations paced at BENCH_WRITES_PER_S by one agent key, and BENCH_READERS service
// keys each listing (a page of 50, no filter or one filter, taking turns) and reading the audit
// log (a page of 100 at a random place) one request after another. Each reader is its own
// principal and writes nothing, so with a replica its reads go there. Latency is measured here,
// from send to parsed body. Runs without DATABASE_READ_URL and with it take turns, BENCH_ROUNDS
// of each; the primary's and the replica's transaction counts (pg_stat_database) show where reads went.
//
//   npm run bench:read-replica
//   BENCH_APPROVALS=200000 BENCH_SECONDS=30 BENCH_READERS=8 npm run bench:read-replica
//
// Both servers share this machine's cores, so what a replica gives here is the primary's share
// of the work, not more cores. The last line of stdout is the figures as JSON.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { applyMigrations } from '../src/db/migrator.js';
import { SCOPES } from '../src/modules/orgs/tenant.js';
import { startStreamingPair, type StreamingPair } from '../test/support/pg-replica.js';
import { formatTable, stats, type Stats } from './lib/figures.js';
import { createOrgs, createServiceKeys, deleteRedisKeys, REDIS_URL } from './lib/fixtures.js';
import { requestJson } from './lib/http.js';
import { startNodeProcess } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';
import { fillApprovals } from './listing/fill.js';

const APPROVALS = envInt('BENCH_APPROVALS', 100_000);
const SECONDS = envInt('BENCH_SECONDS', 20);
const READERS = envInt('BENCH_READERS', 6);
const WRITES_PER_S = envInt('BENCH_WRITES_PER_S', 50);
const DATABASE = 'approval_gate_bench_replica';
const REDIS_PREFIX = 'agbench-replica';
const PORT = 3917;
/** Runs of each kind, taking turns (primary only, with a replica, primary only, ...), so that a loaded moment of the machine hits both. */
const ROUNDS = envInt('BENCH_ROUNDS', 2);
const WARM_CREATIONS = envInt('BENCH_WARM_CREATIONS', 1_000);
const LISTINGS = ['', '&status=pending', '&policyKey=policy-07', '&agent=agent-003', '&action=action.05'];

interface Samples {
  listing: number[];
  audit: number[];
  creation: number[];
  /** Transactions each server committed during the runs. */
  primaryXacts: number;
  replicaXacts: number;
}

interface Run {
  listing: Stats;
  audit: Stats;
  creation: Stats;
  reads: number;
  /** Transactions each server committed during the run. */
  primaryXacts: number;
  replicaXacts: number;
}

async function xacts(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT sum(xact_commit)::text AS n FROM pg_stat_database');
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

runBenchmark('bench:read-replica', 30 * 60_000, async (cleanup) => {
  log('starting a primary and its streaming replica');
  const pair = await startStreamingPair();
  cleanup(() => pair.close());
  await applyMigrations(pair.primaryUrl(DATABASE));
  const [org] = await createOrgs(pair.primaryUrl(DATABASE), 1);
  const readerKeys = await createServiceKeys(pair.primaryUrl(DATABASE), org!.orgId, READERS, SCOPES);
  const filling = new pg.Client({ connectionString: pair.primaryUrl(DATABASE) });
  await filling.connect();
  await fillApprovals(filling, org!.orgId, APPROVALS);
  await filling.query('VACUUM ANALYZE');

  const samples: Record<string, Samples> = {};
  const kinds = [
    ['primary only', {}],
    ['with a replica', { DATABASE_READ_URL: pair.replicaUrl(DATABASE) }],
  ] as const;
  for (const [name, extra] of Array.from({ length: ROUNDS }, () => kinds).flat()) {
    await deleteRedisKeys(REDIS_PREFIX);
    const web = await startNodeProcess({
      label: 'web',
      args: ['--import', 'tsx', 'src/server.ts'],
      env: {
        NODE_ENV: 'production',
        PORT: String(PORT),
        DATABASE_URL: pair.primaryUrl(DATABASE),
        REDIS_URL,
        REDIS_PREFIX,
        LOG_LEVEL: 'warn',
        ...extra,
      },
      port: PORT,
      isReady: async () => (await requestJson({ port: PORT, method: 'GET', path: '/readyz' }).catch(() => ({ status: 0 }))).status === 200,
      readyTimeoutMs: 180_000,
    });
    try {
      if (Object.keys(samples).length === 0) {
        log(`${WARM_CREATIONS} creations for the audit log to hold`);
        await requestCreations(null, org!.key, WARM_CREATIONS);
      }
      const { rows: heads } = await filling.query<{ seq: string }>('SELECT seq FROM audit_chain_heads WHERE org_id = $1', [org!.orgId]);
      log(`${name}: ${SECONDS} s of ${WRITES_PER_S} creations/s and ${READERS} readers`);
      const measured = await measure(org!.key, readerKeys, pair, Number(heads[0]?.seq ?? 0));
      const into = (samples[name] ??= { listing: [], audit: [], creation: [], primaryXacts: 0, replicaXacts: 0 });
      into.listing.push(...measured.listing);
      into.audit.push(...measured.audit);
      into.creation.push(...measured.creation);
      into.primaryXacts += measured.primaryXacts;
      into.replicaXacts += measured.replicaXacts;
    } finally {
      await web.stop();
    }
  }

  await filling.end();
  const runs: Record<string, Run> = Object.fromEntries(
    Object.entries(samples).map(([name, run]) => [
      name,
      {
        listing: stats(run.listing),
        audit: stats(run.audit),
        creation: stats(run.creation),
        reads: run.listing.length + run.audit.length,
        primaryXacts: run.primaryXacts,
        replicaXacts: run.replicaXacts,
      },
    ]),
  );
  const rows = Object.entries(runs).map(([name, run]) => [
    name,
    run.listing.p50,
    run.listing.p99,
    run.audit.p50,
    run.audit.p99,
    run.creation.p99,
    run.reads,
    run.primaryXacts,
    run.replicaXacts,
  ]);
  console.log(
    formatTable(
      ['run', 'listing p50', 'listing p99', 'audit p50', 'audit p99', 'creation p99', 'reads', 'primary xacts', 'replica xacts'],
      rows,
    ),
  );
  console.log(
    JSON.stringify({ approvals: APPROVALS, seconds: SECONDS, rounds: ROUNDS, readers: READERS, writesPerSecond: WRITES_PER_S, runs }),
  );
});

/** Creations by the agent's key: `count` of them one after another (for audit events to read), or paced until `until`. */
async function requestCreations(agent: http.Agent | null, key: string, count: number, until?: number, latencies?: number[]) {
  const pace = 1000 / WRITES_PER_S;
  for (let n = 0; n < count && (until === undefined || Date.now() < until); n++) {
    const started = performance.now();
    const res = await requestJson({
      port: PORT,
      method: 'POST',
      path: '/v1/approvals',
      key,
      body: { action: 'db.migrate', payload: { n }, policyKey: 'deploy' },
      ...(agent ? { agent } : {}),
    });
    if (res.status !== 201) throw new Error(`POST /v1/approvals answered ${res.status}`);
    latencies?.push(performance.now() - started);
    if (until !== undefined) await sleep(Math.max(0, pace - (performance.now() - started)));
  }
}

async function measure(writerKey: string, readerKeys: string[], pair: StreamingPair, headSeq: number): Promise<Samples> {
  const until = Date.now() + SECONDS * 1000;
  const [primaryBefore, replicaBefore] = await Promise.all([xacts(pair.primaryUrl('postgres')), xacts(pair.replicaUrl('postgres'))]);
  const listing: number[] = [];
  const audit: number[] = [];
  const creation: number[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: READERS + 2 });
  const reader = async (key: string, index: number) => {
    for (let n = index; Date.now() < until; n++) {
      const started = performance.now();
      const [path, into] =
        n % 2 === 0
          ? [`/v1/approvals?limit=50${LISTINGS[(n / 2) % LISTINGS.length]}`, listing]
          : [`/v1/audit?limit=100&after=${Math.floor(Math.random() * headSeq)}`, audit];
      const res = await requestJson({ port: PORT, method: 'GET', path, key, agent });
      if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
      into.push(performance.now() - started);
    }
  };
  await Promise.all([
    requestCreations(agent, writerKey, Number.MAX_SAFE_INTEGER, until, creation),
    ...readerKeys.map((key, index) => reader(key, index)),
  ]);
  agent.destroy();
  const [primaryAfter, replicaAfter] = await Promise.all([xacts(pair.primaryUrl('postgres')), xacts(pair.replicaUrl('postgres'))]);
  return {
    listing,
    audit,
    creation,
    primaryXacts: primaryAfter - primaryBefore,
    replicaXacts: replicaAfter - replicaBefore,
  };
}
