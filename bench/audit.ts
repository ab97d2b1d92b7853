// The audit chain at scale: full-chain verification (GET /v1/audit?verify=true) and a bulk CSV
// export by the worker, stored in PostgreSQL (the default) and in EXPORT_DIR, against the ceiling
// of psql's `\copy` of the same rows, in one run.
//
//   npm run bench:audit                              1,000,000 events, 3 runs of each measurement
//   BENCH_AUDIT_EVENTS=200000 BENCH_RUNS=1 npm run bench:audit
//
// The events are appended in SQL (see synthetic-audit-events.ts). For each storage, the API and a
// worker that runs only the `audit-export` queue are child processes, compiled as the Procfile runs
// them (`npm run build` first; BENCH_BUILD=0 uses dist/ as it is), the worker with the node flag
// docs/operations.md#runtime recommends for a worker that runs exports; each worker's RSS is sampled
// from /proc during its exports. Targets: verification no slower than `\copy` (ratio at most 1.0), export at least
// 50% of `\copy`'s rows/s, worker peak RSS under 150 MB. The last line of stdout is the figures as
// JSON.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDataLayer } from '../src/data/database.js';
import { auditExportSelectSql } from '../src/modules/audit/audit-query-store.js';
import { appendSyntheticAuditEvents } from '../src/modules/audit/synthetic-audit-events.js';
import { formatTable, median, round, verdict } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, HOST, recreateDatabase } from './lib/fixtures.js';
import { expectJson } from './lib/http.js';
import { readPeakRssMb, readRssMb } from './lib/proc-stats.js';
import { startWebServer, startWorker } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const EVENTS = envInt('BENCH_AUDIT_EVENTS', 1_000_000);
const RUNS = envInt('BENCH_RUNS', 3);
const DATABASE = 'approval_gate_bench_audit';
const REDIS_PREFIXES = { postgres: 'agbenchaudit', files: 'agbenchauditfiles' };
const PORT = 3921;
const TARGET = { verifyRatio: 1.0, exportShare: 0.5, workerRssMb: 150 };

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; result: T }> {
  const started = performance.now();
  const result = await work();
  return { seconds: (performance.now() - started) / 1000, result };
}

/** psql's `\copy (SELECT ...) TO '/dev/null' csv header`: Postgres writing the CSV, psql receiving it. */
async function psqlCopy(databaseName: string, select: string): Promise<void> {
  const child = spawn(
    'psql',
    [
      '-h',
      HOST,
      '-U',
      'postgres',
      '-d',
      databaseName,
      '-X',
      '-q',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      `\\copy (${select}) to '/dev/null' csv header`,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0) throw new Error(`psql exited with ${code}: ${stderr}`);
}

/** One storage's web and export worker: PostgreSQL chunks (the default) or files in EXPORT_DIR. */
interface StorageRig {
  name: 'postgres' | 'files';
  port: number;
  worker: { pid: number };
  idleRssMb: number;
  peakRssMb: number;
  seconds: number[];
}

/** POST an export, poll it to completion; the worker's RSS is sampled all the while. */
async function exportOnce(rig: StorageRig, key: string, rows: number): Promise<{ seconds: number; id: string }> {
  const sampler = setInterval(() => (rig.peakRssMb = Math.max(rig.peakRssMb, readRssMb(rig.worker.pid))), 20);
  try {
    const exported = await timed(async () => {
      const created = await expectJson(202, { port: rig.port, method: 'POST', path: '/v1/audit/exports', key, body: {} });
      for (;;) {
        const status = await expectJson(200, { port: rig.port, method: 'GET', path: `/v1/audit/exports/${created.id}`, key });
        if (status.status === 'completed') return status;
        if (status.status === 'failed') throw new Error(`${rig.name} export ${created.id} failed`);
        await sleep(20);
      }
    });
    if (exported.result.rowCount !== rows) throw new Error(`${rig.name} export wrote ${exported.result.rowCount} rows, not ${rows}`);
    return { seconds: exported.seconds, id: exported.result.id };
  } finally {
    clearInterval(sampler);
  }
}

runBenchmark('bench:audit', 30 * 60_000, async (cleanup) => {
  const exportDir = await mkdtemp(path.join(tmpdir(), 'ag-bench-audit-'));
  cleanup(async () => {
    await dropDatabase(DATABASE);
    for (const prefix of Object.values(REDIS_PREFIXES)) await deleteRedisKeys(prefix);
    await rm(exportDir, { recursive: true, force: true });
    log(`cleaned up: dropped ${DATABASE}, Redis keys ${Object.values(REDIS_PREFIXES).join(':*, ')}:*, ${exportDir}`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [org] = await createOrgs(dbUrl, 1);
  const { orgId, key } = org!;

  log(`appending ${EVENTS} events to one organization's chain in SQL ...`);
  const data = createDataLayer(dbUrl, { size: 2, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  const generation = await timed(() => appendSyntheticAuditEvents(data.sql, orgId, EVENTS));
  await data.db.$executeRawUnsafe('VACUUM ANALYZE audit_events');
  log(`appended in ${round(generation.seconds)} s (${round(EVENTS / generation.seconds, 0)} events/s)`);
  // The organization's own events (its creation, its keys') come first: the chain is a few events longer.
  const [{ events: chainEvents } = { events: 0 }] = await data.sql.query<{ events: number }>(
    'bench-chain-length',
    'SELECT count(*)::int AS events FROM audit_events WHERE org_id = $1',
    [orgId],
  );

  // Two deployments over the same database, each with its own Redis prefix (so its own queue):
  // one keeps exports in PostgreSQL, the other in EXPORT_DIR.
  const rigs: StorageRig[] = [];
  for (const [name, port, storageEnv] of [
    ['postgres', PORT, {}],
    ['files', PORT + 1, { EXPORT_DIR: exportDir }],
  ] as const) {
    const redisPrefix = REDIS_PREFIXES[name];
    const api = await startWebServer({ port, databaseUrl: dbUrl, redisPrefix, env: storageEnv });
    cleanup(() => api.stop());
    // The web process started from the same build: dist/ is there. A worker that runs exports alone,
    // as docs/operations.md#runtime recommends running it: with V8's young generation held small.
    const worker = await startWorker({
      label: `${name} export worker`,
      args: ['--max-semi-space-size=1', 'dist/workers/index.js'],
      env: { DATABASE_URL: dbUrl, REDIS_PREFIX: redisPrefix, WORKER_QUEUES: 'audit-export', LOG_LEVEL: 'info', ...storageEnv },
    });
    cleanup(() => worker.stop());
    rigs.push({ name, port, worker, idleRssMb: 0, peakRssMb: 0, seconds: [] });
  }
  await sleep(2000); // let the workers settle after start-up before their idle figure
  for (const rig of rigs) rig.peakRssMb = rig.idleRssMb = readRssMb(rig.worker.pid);
  const [database, files] = rigs as [StorageRig, StorageRig];
  log(
    `export workers: postgres pid ${database.worker.pid} (RSS ${round(database.idleRssMb)} MB), files pid ${files.worker.pid} (RSS ${round(files.idleRssMb)} MB)`,
  );

  // Every measurement runs RUNS times, interleaved, so that a slow moment of the machine hits all of them.
  const select = auditExportSelectSql(orgId, { filters: {}, afterSeq: 0, throughSeq: chainEvents }).replace(/\s+/g, ' ');
  const copyS: number[] = [];
  const verifyS: number[] = [];
  for (let run = 1; run <= RUNS; run++) {
    copyS.push((await timed(() => psqlCopy(DATABASE, select))).seconds);

    const verify = await timed(() =>
      expectJson(200, { port: PORT, method: 'GET', path: '/v1/audit?verify=true&limit=1', key, timeoutMs: 300_000 }),
    );
    const verification = verify.result.verification;
    if (!verification.intact || verification.count !== chainEvents) throw new Error(`verification: ${JSON.stringify(verification)}`);
    verifyS.push(verify.seconds);

    // Alternate which storage goes first, so neither always follows the other's writes.
    for (const rig of run % 2 === 1 ? [database, files] : [files, database]) {
      const exported = await exportOnce(rig, key, chainEvents);
      rig.seconds.push(exported.seconds);
      // Free what the run stored, so every run writes into the same room.
      if (rig.name === 'files') await rm(path.join(exportDir, `${exported.id}.csv`));
      else await data.sql.query(null, 'DELETE FROM audit_export_chunks WHERE export_id = $1', [exported.id]);
    }
    log(
      `run ${run}: \\copy ${round(copyS.at(-1)!, 2)} s, verify ${round(verifyS.at(-1)!, 2)} s, ` +
        `export to postgres ${round(database.seconds.at(-1)!, 2)} s, to files ${round(files.seconds.at(-1)!, 2)} s`,
    );
  }
  await data.close();

  const copy = median(copyS);
  const verify = median(verifyS);
  const exportFigures = (rig: StorageRig) => {
    const seconds = median(rig.seconds);
    return {
      seconds: round(seconds, 2),
      rowsPerS: round(chainEvents / seconds, 0),
      shareOfCopy: round(copy / seconds, 2),
      workerRssMb: {
        idle: round(rig.idleRssMb),
        peakDuringExports: round(rig.peakRssMb),
        highWaterMark: round(readPeakRssMb(rig.worker.pid)),
      },
    };
  };
  const exports = { postgres: exportFigures(database), files: exportFigures(files) };
  const figures = {
    events: EVENTS,
    runs: RUNS,
    generation: { seconds: round(generation.seconds), eventsPerS: round(EVENTS / generation.seconds, 0) },
    copy: { seconds: round(copy, 2), rowsPerS: round(chainEvents / copy, 0) },
    verify: { seconds: round(verify, 2), ratioToCopy: round(verify / copy, 2) },
    export: exports,
    targets: {
      verifyNoSlowerThanCopy: verify / copy <= TARGET.verifyRatio,
      postgresExportAtLeastHalfOfCopy: exports.postgres.shareOfCopy >= TARGET.exportShare,
      filesExportAtLeastHalfOfCopy: exports.files.shareOfCopy >= TARGET.exportShare,
      workerRssUnder150Mb: rigs.every((rig) => rig.peakRssMb < TARGET.workerRssMb),
    },
  };

  console.log(`\n${EVENTS} audit events in one organization; medians of ${RUNS} run(s)\n`);
  console.log(
    formatTable(
      ['figure', 'value', 'target'],
      [
        ['psql \\copy of the export rows (s)', figures.copy.seconds, 'ceiling'],
        ['psql \\copy rows/s', figures.copy.rowsPerS, ''],
        ['GET /v1/audit?verify=true (s)', figures.verify.seconds, ''],
        ['verification / \\copy time', figures.verify.ratioToCopy, `<= ${TARGET.verifyRatio}`],
        ...(['postgres', 'files'] as const).flatMap((name) => [
          [`bulk export to ${name}, POST to completed (s)`, exports[name].seconds, ''],
          [`bulk export to ${name} rows/s`, exports[name].rowsPerS, ''],
          [`bulk export to ${name} / \\copy rows/s`, exports[name].shareOfCopy, `>= ${TARGET.exportShare}`],
          [`${name} worker RSS idle (MB)`, exports[name].workerRssMb.idle, ''],
          [`${name} worker RSS peak during exports (MB)`, exports[name].workerRssMb.peakDuringExports, `< ${TARGET.workerRssMb}`],
          [`${name} worker VmHWM, whole life (MB)`, exports[name].workerRssMb.highWaterMark, ''],
        ]),
        ['events appended per second (setup)', figures.generation.eventsPerS, ''],
      ],
    ),
  );
  console.log(
    `\nTargets: verification <= \\copy: ${verdict(figures.targets.verifyNoSlowerThanCopy)}; ` +
      `export >= 50% of \\copy rows/s: postgres ${verdict(figures.targets.postgresExportAtLeastHalfOfCopy)}, ` +
      `files ${verdict(figures.targets.filesExportAtLeastHalfOfCopy)}; ` +
      `worker peak RSS < 150 MB: ${verdict(figures.targets.workerRssUnder150Mb)}`,
  );
  console.log(JSON.stringify(figures));
});
