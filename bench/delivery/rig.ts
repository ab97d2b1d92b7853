// What every step of bench/delivery.ts runs against: a fresh database with one organization per
// scenario, the receiver, web and worker processes, and the policies and webhook endpoints,
// registered over the API as a client would.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mapConcurrent } from '../lib/concurrency.js';
import { createOrgs, deleteRedisKeys, dropDatabase, HOST, recreateDatabase, REDIS_URL, type BenchOrg } from '../lib/fixtures.js';
import { expectJson, putPolicy } from '../lib/http.js';
import { waitUntilIdle } from '../lib/proc-stats.js';
import { answers200, buildOnce, startNodeProcess, startWorker, type NodeProcess } from '../lib/processes.js';
import { log, type Cleanup } from '../lib/run.js';
import {
  API_PORT,
  BUILD,
  CEILING_PREFIX,
  COMPILED,
  DATABASE,
  DELIVERY_CONCURRENCY,
  EVENT,
  EXPIRY_POLICY,
  EXPIRY_TIMEOUT_S,
  LATENCY_PATH,
  RECEIVER_PORT,
  REDIS_PREFIX,
  REVIEW_POLICY,
} from './settings.js';

export type RunMode = 'compiled' | 'tsx';

export interface DeliveryRig {
  mode: RunMode;
  /** What the report must say about how the run went (a failed build, a missing profile). */
  notes: string[];
  /** Every duplicate delivery seen, described, for the report. */
  duplicateReports: string[];
  tmp: string;
  dbUrl: string;
  latencyOrg: BenchOrg;
  expiryOrg: BenchOrg;
  throughputOrgs: Map<number, BenchOrg>;
  /** Paths at the receiver of the endpoints registered for each throughput org. */
  throughputPaths: Map<number, string[]>;
  receiver: NodeProcess;
  web: NodeProcess;
  /** The current worker; see restartWorker. */
  worker: NodeProcess;
  /** Log files of every worker started: their warnings and errors are reported at the end. */
  workerLogs: string[];
  /** Stops the worker and starts another, its log in its own file; `extraNodeArgs` go before the script (`--cpu-prof`). */
  restartWorker(label: string, extraNodeArgs: string[]): Promise<void>;
  /** The processes whose exit stops a step and whose CPU each step reports. */
  watched(): NodeProcess[];
  /** Lets the web and worker processes finish what earlier steps left (expiry scheduling, sweeps). */
  settle(): Promise<void>;
}

export async function startRig(cleanup: Cleanup): Promise<DeliveryRig> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-delivery-'));
  cleanup(async () => {
    rmSync(tmp, { recursive: true, force: true });
    await dropDatabase(DATABASE);
    const deleted = (await deleteRedisKeys(REDIS_PREFIX)) + (await deleteRedisKeys(CEILING_PREFIX));
    log(`cleaned up: dropped ${DATABASE}, deleted ${deleted} Redis key(s) ${REDIS_PREFIX}:* and ${CEILING_PREFIX}:*, removed ${tmp}`);
  });
  // Leftovers of an interrupted earlier run would be counted as this run's work.
  await deleteRedisKeys(REDIS_PREFIX);
  await deleteRedisKeys(CEILING_PREFIX);

  // Compiled unless asked otherwise; a failed build falls back to tsx, loudly.
  let mode: RunMode = COMPILED ? 'compiled' : 'tsx';
  const notes: string[] = [];
  if (mode === 'compiled' && BUILD) {
    const build = await buildOnce();
    if (build.code !== 0) {
      log(`!!! npm run build failed (code ${build.code}); running from source with tsx instead\n${build.output}`);
      notes.push(`npm run build failed (code ${build.code}): web and worker ran from source with tsx, not compiled.`);
      mode = 'tsx';
    }
  }
  if (mode === 'compiled' && !(existsSync('dist/src/server.js') && existsSync('dist/workers/index.js'))) {
    notes.push('dist/ has no build: web and worker ran from source with tsx, not compiled.');
    mode = 'tsx';
  }
  const entry = (compiled: string, source: string) => (mode === 'compiled' ? [compiled] : ['--import', 'tsx', source]);
  const webArgs = entry('dist/src/server.js', 'src/server.ts');
  const workerArgs = entry('dist/workers/index.js', 'workers/index.ts');
  log(`web: node ${webArgs.join(' ')}; worker: node ${workerArgs.join(' ')}`);

  const dbUrl = await recreateDatabase(DATABASE);
  // One org per scenario: latency, 1 / 10 / 100 endpoints, expiry.
  const [latencyOrg, tp1Org, tp10Org, tp100Org, expiryOrg] = await createOrgs(dbUrl, 5);
  const throughputOrgs = new Map<number, BenchOrg>([
    [1, tp1Org!],
    [10, tp10Org!],
    [100, tp100Org!],
  ]);
  log(`migrated ${DATABASE}, 5 organizations`);

  const productEnv = {
    NODE_ENV: 'production',
    DATABASE_URL: dbUrl,
    REDIS_URL,
    REDIS_PREFIX,
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_DELIVERY_CONCURRENCY: String(DELIVERY_CONCURRENCY),
  };
  const receiver = await startNodeProcess({
    label: 'receiver',
    args: ['--import', 'tsx', 'bench/delivery/receiver.ts'],
    env: { PORT: String(RECEIVER_PORT) },
    port: RECEIVER_PORT,
    isReady: () => answers200(RECEIVER_PORT, '/_bench/count'),
  });
  cleanup(() => receiver.stop());
  const web = await startNodeProcess({
    label: 'web',
    args: webArgs,
    env: { ...productEnv, PORT: String(API_PORT) },
    port: API_PORT,
    isReady: () => answers200(API_PORT, '/readyz'),
  });
  cleanup(() => web.stop());

  const workerLogs: string[] = [];
  const startWorkerLogged = async (label: string, extraNodeArgs: string[] = []): Promise<NodeProcess> => {
    const stdoutFile = path.join(tmp, `${label}.log`);
    workerLogs.push(stdoutFile);
    const started = await startWorker({ label: 'worker', args: [...extraNodeArgs, ...workerArgs], env: productEnv, stdoutFile });
    cleanup(() => started.stop());
    return started;
  };

  const rig: DeliveryRig = {
    mode,
    notes,
    duplicateReports: [],
    tmp,
    dbUrl,
    latencyOrg: latencyOrg!,
    expiryOrg: expiryOrg!,
    throughputOrgs,
    throughputPaths: new Map(),
    receiver,
    web,
    worker: await startWorkerLogged('worker'),
    workerLogs,
    async restartWorker(label, extraNodeArgs) {
      await rig.worker.stop();
      rig.worker = await startWorkerLogged(label, extraNodeArgs);
    },
    watched: () => [rig.web, rig.worker, rig.receiver],
    async settle() {
      for (const p of [rig.web, rig.worker]) {
        await waitUntilIdle(p.pid, { windowMs: 1000, maxCpuFraction: 0.05, timeoutMs: 120_000 }).catch((error: unknown) =>
          log(`!!! ${p.label} not idle: ${String(error)}; going on`),
        );
      }
    },
  };
  log(`receiver pid ${receiver.pid}, web pid ${web.pid}, worker pid ${rig.worker.pid}`);
  await registerPoliciesAndEndpoints(rig);
  return rig;
}

/** Policies and endpoints, over the API as a client would. */
async function registerPoliciesAndEndpoints(rig: DeliveryRig): Promise<void> {
  for (const org of [rig.latencyOrg, ...rig.throughputOrgs.values()]) {
    await putPolicy(API_PORT, org.key, REVIEW_POLICY, { defaultOutcome: 'review', timeoutSeconds: 86_400 });
  }
  await putPolicy(API_PORT, rig.expiryOrg.key, EXPIRY_POLICY, { defaultOutcome: 'review', timeoutSeconds: EXPIRY_TIMEOUT_S });
  const register = (org: BenchOrg, hookPath: string) =>
    expectJson(201, {
      port: API_PORT,
      method: 'POST',
      path: '/v1/webhooks',
      key: org.key,
      body: { url: `http://${HOST}:${RECEIVER_PORT}${hookPath}`, events: [EVENT] },
    });
  await register(rig.latencyOrg, LATENCY_PATH);
  for (const [endpoints, org] of rig.throughputOrgs) {
    const paths = Array.from({ length: endpoints }, (_, i) => `/hook/tp${endpoints}/${i}`);
    await mapConcurrent(paths, 10, (hookPath) => register(org, hookPath));
    rig.throughputPaths.set(endpoints, paths);
  }
  log(`policies and ${1 + [...rig.throughputOrgs.keys()].reduce((a, b) => a + b, 0)} webhook endpoints registered`);
}
