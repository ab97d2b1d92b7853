// The audit chain at scale: full-chain verification (GET /v1/audit?verify=true) and a bulk CSV
// export by the worker, against the ceiling of psql's `\copy` of the same rows, in one run.
//
//   npm run bench:audit                              1,000,000 events, 3 runs of each measurement
//   BENCH_AUDIT_EVENTS=200000 BENCH_RUNS=1 npm run bench:audit
//
// The events are appended in SQL (see synthetic-audit-events.ts). The API and a worker that runs
// only the `audit-export` queue are child processes, compiled as the Procfile runs them (`npm run
// build` first; BENCH_BUILD=0 uses dist/ as it is); the worker's RSS is sampled from /proc during
// the exports. Targets: verification no slower than `\copy` (ratio at most 1.0), export at least
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
const REDIS_PREFIX = 'agbenchaudit';
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

runBenchmark('bench:audit', 30 * 60_000, async (cleanup) => {
  const exportDir = await mkdtemp(path.join(tmpdir(), 'ag-bench-audit-'));
  cleanup(async () => {
    await dropDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
    await rm(exportDir, { recursive: true, force: true });
    log(`cleaned up: dropped ${DATABASE}, Redis keys ${REDIS_PREFIX}:*, ${exportDir}`);
  });
  const dbUrl = await recreateDatabase(DATABASE);
  const [org] = await createOrgs(dbUrl, 1);
  const { orgId, key } = org!;

  log(`appending ${EVENTS} events to one organization's chain in SQL ...`);
  const data = createDataLayer(dbUrl, { size: 2, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  const generation = await timed(() => appendSyntheticAuditEvents(data.sql, orgId, EVENTS));
  await data.db.$executeRawUnsafe('VACUUM ANALYZE audit_events');
  await data.close();
  log(`appended in ${round(generation.seconds)} s (${round(EVENTS / generation.seconds, 0)} events/s)`);

  const api = await startWebServer({ port: PORT, databaseUrl: dbUrl, redisPrefix: REDIS_PREFIX, env: { EXPORT_DIR: exportDir } });
  cleanup(() => api.stop());
  // The web process started from the same build: dist/ is there.
  const worker = await startWorker({
    label: 'export worker',
    args: ['dist/workers/index.js'],
    env: { DATABASE_URL: dbUrl, REDIS_PREFIX, EXPORT_DIR: exportDir, WORKER_QUEUES: 'audit-export', LOG_LEVEL: 'info' },
  });
  cleanup(() => worker.stop());
  await sleep(2000); // let the worker settle after start-up before its idle figure
  const workerIdleRssMb = readRssMb(worker.pid);
  log(`web pid ${api.pid}, export worker pid ${worker.pid} (RSS ${round(workerIdleRssMb)} MB)`);

  // Every measurement runs RUNS times, interleaved, so that a slow moment of the machine hits all three.
  const select = auditExportSelectSql(orgId, {}).replace(/\s+/g, ' ');
  const copyS: number[] = [];
  const verifyS: number[] = [];
  const exportS: number[] = [];
  let workerPeakRssMb = workerIdleRssMb;
  for (let run = 1; run <= RUNS; run++) {
    copyS.push((await timed(() => psqlCopy(DATABASE, select))).seconds);

    const verify = await timed(() =>
      expectJson(200, { port: PORT, method: 'GET', path: '/v1/audit?verify=true&limit=1', key, timeoutMs: 300_000 }),
    );
    const verification = verify.result.verification;
    if (!verification.intact || verification.count !== EVENTS) throw new Error(`verification: ${JSON.stringify(verification)}`);
    verifyS.push(verify.seconds);

    const sampler = setInterval(() => (workerPeakRssMb = Math.max(workerPeakRssMb, readRssMb(worker.pid))), 20);
    const exported = await timed(async () => {
      const created = await expectJson(202, { port: PORT, method: 'POST', path: '/v1/audit/exports', key, body: {} });
      for (;;) {
        const status = await expectJson(200, { port: PORT, method: 'GET', path: `/v1/audit/exports/${created.id}`, key });
        if (status.status === 'completed') return status;
        if (status.status === 'failed') throw new Error(`export ${created.id} failed`);
        await sleep(20);
      }
    });
    clearInterval(sampler);
    if (exported.result.rowCount !== EVENTS) throw new Error(`export wrote ${exported.result.rowCount} rows, not ${EVENTS}`);
    exportS.push(exported.seconds);
    await rm(path.join(exportDir, `${exported.result.id}.csv`));
    log(`run ${run}: \\copy ${round(copyS.at(-1)!, 2)} s, verify ${round(verifyS.at(-1)!, 2)} s, export ${round(exported.seconds, 2)} s`);
  }
  const workerHwmMb = readPeakRssMb(worker.pid);

  const copy = median(copyS);
  const verify = median(verifyS);
  const exportMedian = median(exportS);
  const figures = {
    events: EVENTS,
    runs: RUNS,
    generation: { seconds: round(generation.seconds), eventsPerS: round(EVENTS / generation.seconds, 0) },
    copy: { seconds: round(copy, 2), rowsPerS: round(EVENTS / copy, 0) },
    verify: { seconds: round(verify, 2), ratioToCopy: round(verify / copy, 2) },
    export: { seconds: round(exportMedian, 2), rowsPerS: round(EVENTS / exportMedian, 0), shareOfCopy: round(copy / exportMedian, 2) },
    workerRssMb: { idle: round(workerIdleRssMb), peakDuringExports: round(workerPeakRssMb), highWaterMark: round(workerHwmMb) },
    targets: {
      verifyNoSlowerThanCopy: verify / copy <= TARGET.verifyRatio,
      exportAtLeastHalfOfCopy: copy / exportMedian >= TARGET.exportShare,
      workerRssUnder150Mb: workerPeakRssMb < TARGET.workerRssMb,
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
        ['bulk export, POST to completed (s)', figures.export.seconds, ''],
        ['bulk export rows/s', figures.export.rowsPerS, ''],
        ['bulk export / \\copy rows/s', figures.export.shareOfCopy, `>= ${TARGET.exportShare}`],
        ['worker RSS idle (MB)', figures.workerRssMb.idle, ''],
        ['worker RSS peak during exports (MB)', figures.workerRssMb.peakDuringExports, `< ${TARGET.workerRssMb}`],
        ['worker VmHWM, whole life (MB)', figures.workerRssMb.highWaterMark, ''],
        ['events appended per second (setup)', figures.generation.eventsPerS, ''],
      ],
    ),
  );
  console.log(
    `\nTargets: verification <= \\copy: ${verdict(figures.targets.verifyNoSlowerThanCopy)}; ` +
      `export >= 50% of \\copy rows/s: ${verdict(figures.targets.exportAtLeastHalfOfCopy)}; ` +
      `worker peak RSS < 150 MB: ${verdict(figures.targets.workerRssUnder150Mb)}`,
  );
  console.log(JSON.stringify(figures));
});
