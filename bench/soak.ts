// A soak under faults: 2 web and 2 worker processes behind a round-robin proxy, on a PostgreSQL
// cluster and a Redis of the soak's own (never the machine's shared ones), with a steady mix of
// creations, long-polls, decisions and webhook deliveries while faults are injected on a schedule,
// each at least twice: SIGKILL a worker (and start another), restart a web process, restart Redis
// (it comes back empty), cut every PostgreSQL connection, stop PostgreSQL for a few seconds.
// At the end it counts what clients were answered, what they were told was created and decided
// against what the database holds, the webhooks expected against those delivered (by event id), and
// verifies the audit chain; it prints the figures and exits non-zero if anything was lost.
//
//   npm run soak                              10 minutes
//   SOAK_SECONDS=90 npm run soak              a short run (SOAK_MINUTES also works)
//   SOAK_CREATIONS_PER_SECOND=20 SOAK_LONG_POLLERS=10 SOAK_BASE_PORT=4700 npm run soak
//   SOAK_FAULTS=stop-postgres,restart-web npm run soak    only those faults (each still twice)
//
// Processes run compiled, as the Procfile does (`npm run build` first; BENCH_BUILD=0 uses dist/ as
// it is). Their logs are kept in a temporary directory, named at the start. The last line of
// stdout is the figures as JSON.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { applyMigrations } from '../src/db/migrator.js';
import { APPROVAL_WEBHOOK_TYPES } from '../src/modules/audit/audit-events.js';
import { formatTable } from './lib/figures.js';
import { createOrgs } from './lib/fixtures.js';
import { expectJson, putPolicy } from './lib/http.js';
import { startWebServer, startWorker, type NodeProcess } from './lib/processes.js';
import { envInt, envNumber, log, runBenchmark } from './lib/run.js';
import { createPostgresCluster } from './soak/postgres-cluster.js';
import { startRedisServer } from './soak/redis-server.js';
import { drainOwedWebhooks, startTrafficRig } from './soak/traffic-rig.js';

const SECONDS = envInt('SOAK_SECONDS', envNumber('SOAK_MINUTES', 10) * 60);
const CREATIONS_PER_SECOND = envNumber('SOAK_CREATIONS_PER_SECOND', 20);
const LONG_POLLERS = envInt('SOAK_LONG_POLLERS', 10);
const BASE_PORT = envInt('SOAK_BASE_PORT', 4700);
/** After the traffic stops: how long deliveries still owed may take to arrive. */
const DRAIN_SECONDS = envInt('SOAK_DRAIN_SECONDS', 300);
const PG_OUTAGE_MS = 3_000;
/** One delivery in this many is refused by the receiver (503), so retries are part of the mix. */
const RECEIVER_FAIL_EVERY = 20;

const PORTS = {
  postgres: BASE_PORT,
  redis: BASE_PORT + 1,
  proxy: BASE_PORT + 2,
  webs: [BASE_PORT + 3, BASE_PORT + 4],
};
const DATABASE = 'approval_gate';
const POLICY_KEY = 'soak';

const ALL_FAULTS = ['kill-worker', 'restart-web', 'restart-redis', 'cut-postgres-connections', 'stop-postgres'] as const;
type Fault = (typeof ALL_FAULTS)[number];
/** `SOAK_FAULTS=stop-postgres,restart-web` injects only those (each still twice); `none`, none. */
const FAULTS = faultsFromEnvironment(process.env.SOAK_FAULTS);

function faultsFromEnvironment(raw: string | undefined): Fault[] {
  if (raw === undefined || raw === '') return [...ALL_FAULTS];
  if (raw === 'none') return [];
  const names = raw.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(ALL_FAULTS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`SOAK_FAULTS: ${unknown.join(', ')} unknown; faults are ${ALL_FAULTS.join(', ')} (or none)`);
  return names as Fault[];
}

runBenchmark('soak', (SECONDS + DRAIN_SECONDS + 600) * 1000, async (cleanup) => {
  const logDir = mkdtempSync(path.join(tmpdir(), 'ag-soak-logs-'));
  log(`soak of ${SECONDS} s; process logs in ${logDir}`);

  const cluster = await createPostgresCluster(PORTS.postgres);
  cleanup(() => cluster.destroy());
  const redis = await startRedisServer(PORTS.redis);
  cleanup(() => redis.stop());
  const databaseUrl = cluster.url(DATABASE);
  await applyMigrations(databaseUrl);
  const [org] = await createOrgs(databaseUrl, 1);
  const { orgId, key, reviewerKey } = org!;
  log(`own PostgreSQL on ${PORTS.postgres}, own Redis on ${PORTS.redis}, migrated; organization ${orgId}`);

  const env = {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '10',
    REDIS_URL: redis.url,
    REDIS_PREFIX: 'ag',
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    // The retry schedule of docs/webhooks.md in thousandths: all ten attempts within about four minutes, not days.
    WEBHOOK_BACKOFF_SCALE: '0.001',
    WORKER_LOCK_DURATION_MS: '5000',
    SHUTDOWN_TIMEOUT_MS: '10000',
  };
  const startWeb = (index: number) =>
    startWebServer({ port: PORTS.webs[index]!, databaseUrl, redisPrefix: 'ag', env, stdoutFile: path.join(logDir, `web-${index}.log`) });
  let generation = 0;
  const startWorkerProcess = (index: number) =>
    startWorker({
      label: `worker ${index}`,
      args: ['dist/workers/index.js'],
      // `info`: a worker is known to be up by its "worker started" line.
      env: { ...env, LOG_LEVEL: 'info' },
      stdoutFile: path.join(logDir, `worker-${index}-${generation++}.log`),
    });
  const webs: NodeProcess[] = [];
  const workers: NodeProcess[] = [];
  cleanup(() => Promise.all([...webs, ...workers].map((child) => child.stop())));
  for (const index of [0, 1]) {
    webs.push(await startWeb(index));
    workers.push(await startWorkerProcess(index));
  }
  const { port, proxy, receiver, traffic } = await startTrafficRig({
    proxyPort: PORTS.proxy,
    webPorts: PORTS.webs,
    key,
    reviewerKey,
    policyKey: POLICY_KEY,
    receiverFailEvery: RECEIVER_FAIL_EVERY,
    creationsPerSecond: CREATIONS_PER_SECOND,
    longPollers: LONG_POLLERS,
    cleanup,
  });
  const startedAt = Date.now();
  const elapsed = () => `${Math.round((Date.now() - startedAt) / 1000)} s`;
  traffic.start();

  const inject = async (fault: Fault, round: number): Promise<string> => {
    const index = round % 2;
    switch (fault) {
      case 'kill-worker': {
        const victim = workers[index]!;
        process.kill(victim.pid, 'SIGKILL');
        while (!victim.exited()) await sleep(20);
        workers[index] = await startWorkerProcess(index);
        return `worker ${index} (pid ${victim.pid}) killed, pid ${workers[index]!.pid} started`;
      }
      case 'restart-web': {
        await webs[index]!.stop();
        webs[index] = await startWeb(index);
        return `web ${index} stopped (SIGTERM) and started again`;
      }
      case 'restart-redis':
        await redis.restart();
        return 'Redis restarted, empty';
      case 'cut-postgres-connections':
        return `${await cluster.terminateConnections(DATABASE)} PostgreSQL connections terminated`;
      case 'stop-postgres':
        await cluster.stop();
        await sleep(PG_OUTAGE_MS);
        await cluster.start();
        return `PostgreSQL stopped for ${PG_OUTAGE_MS / 1000} s and started again`;
    }
  };
  const schedule = [0, 1].flatMap((round) => FAULTS.map((fault) => ({ fault, round })));
  const faultLog: { at: string; fault: Fault; what: string; startedAt: number; endedAt: number }[] = [];
  for (const [slot, { fault, round }] of schedule.entries()) {
    await sleep(Math.max(0, startedAt + ((slot + 1) * SECONDS * 1000) / (schedule.length + 1) - Date.now()));
    const faultStartedAt = Date.now();
    const what = await inject(fault, round);
    faultLog.push({ at: elapsed(), fault, what, startedAt: faultStartedAt, endedAt: Date.now() });
    log(`${elapsed()}: ${what}`);
  }
  await sleep(Math.max(0, startedAt + SECONDS * 1000 - Date.now()));
  log(`${elapsed()}: stopping the traffic`);
  await traffic.stop();

  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup(() => db.end());
  log(`waiting up to ${DRAIN_SECONDS} s for the webhooks still owed ...`);
  const expected = await drainOwedWebhooks(db, orgId, receiver, DRAIN_SECONDS);

  const ids = [...traffic.acknowledged.created.keys()];
  const { rows: stored } = await db.query<{ id: string; status: string }>('SELECT id, status FROM approvals WHERE id = ANY($1)', [ids]);
  const storedStatus = new Map(stored.map((row) => [row.id, row.status]));
  const lostCreations = ids.filter((id) => !storedStatus.has(id));
  const lostDecisions = [...traffic.acknowledged.decided].filter(([id, verdict]) => storedStatus.get(id) !== verdict);
  const { rows: totals } = await db.query<{ status: string; count: number }>(
    'SELECT status, count(*)::int AS count FROM approvals WHERE org_id = $1 GROUP BY status ORDER BY status',
    [orgId],
  );
  const [{ audited }] = (
    await db.query<{ audited: number }>('SELECT count(*)::int AS audited FROM audit_events WHERE org_id = $1 AND type = ANY($2)', [
      orgId,
      [...APPROVAL_WEBHOOK_TYPES],
    ])
  ).rows as [{ audited: number }];
  // A creation whose policy evaluation was stopped (time limit, no evaluation worker in time) fails closed to review.
  const { rows: stoppedEvaluations } = await db.query<{ error: string; count: number }>(
    `SELECT regexp_replace(data::jsonb->>'evaluationError', '[0-9]+ ms', 'N ms', 'g') AS error, count(*)::int AS count
       FROM audit_events WHERE org_id = $1 AND type = 'approval.created' AND data::jsonb ? 'evaluationError' GROUP BY 1 ORDER BY 2 DESC`,
    [orgId],
  );
  const { rows: deliveryRows } = await db.query<{ status: string; count: number }>(
    'SELECT status, count(*)::int AS count FROM webhook_deliveries WHERE org_id = $1 GROUP BY status',
    [orgId],
  );
  const expectedSet = new Set(expected);
  const missing = expected.filter((id) => !receiver.deliveries.has(id));
  // Where each missing event stands: still owed (pending, with its attempts so far), failed, or never handed to the endpoint.
  const { rows: missingDeliveries } = await db.query<{
    event_id: string;
    status: string;
    attempt_count: number;
    next_attempt_at: Date | null;
  }>('SELECT event_id, status, attempt_count, next_attempt_at FROM webhook_deliveries WHERE event_id = ANY($1)', [missing]);
  for (const delivery of missingDeliveries) log(`not delivered: ${JSON.stringify(delivery)}`);
  const unexpected = [...receiver.deliveries.keys()].filter((id) => !expectedSet.has(id));
  const underTwoIds = [...receiver.deliveries.values()].filter((deliveryIds) => deliveryIds.size > 1).length;
  const verification = (await expectJson(200, { port, method: 'GET', path: '/v1/audit?verify=true&limit=1', key, timeoutMs: 120_000 }))
    .verification as { intact: boolean; count: number; brokenAtSeq: number | null };

  // Each request that got no answer, put down to the fault whose window (from its injection to its
  // end) overlapped the request's wait, and to the web process its connection was piped to.
  const unanswered = traffic.unanswered.map(({ operation, sentAt, timeoutMs, localPort }) => {
    const fault = faultLog.findLast((entry) => entry.startedAt <= sentAt + timeoutMs && entry.endedAt >= sentAt);
    const backend = localPort === undefined ? undefined : proxy.backendOf(localPort);
    return {
      operation,
      sentAtSecond: Math.round((sentAt - startedAt) / 1000),
      fault: fault ? `${fault.fault} at ${fault.at}` : 'no fault',
      web: backend === undefined ? 'unknown' : `web ${PORTS.webs.indexOf(backend)}`,
    };
  });
  const unansweredByCause = new Map<string, number>();
  for (const { operation, fault, web } of unanswered) {
    const cause = `${operation}|${fault}|${web}`;
    unansweredByCause.set(cause, (unansweredByCause.get(cause) ?? 0) + 1);
  }

  const statuses = Object.fromEntries(
    [...traffic.statuses].map(([operation, byStatus]) => [operation, Object.fromEntries([...byStatus].sort())]),
  );
  const figures = {
    seconds: SECONDS,
    faults: faultLog,
    responses: statuses,
    abandonedAfterRetries: traffic.abandoned,
    unanswered: Object.fromEntries(unansweredByCause),
    approvals: {
      acknowledgedCreated: ids.length,
      acknowledgedDecided: traffic.acknowledged.decided.size,
      inDatabase: Object.fromEntries(totals.map((row) => [row.status, row.count])),
      lostCreations: lostCreations.length,
      lostDecisions: lostDecisions.length,
      evaluationsStopped: Object.fromEntries(stoppedEvaluations.map((row) => [row.error, row.count])),
    },
    webhooks: {
      expected: expected.length,
      auditEventsOfThoseTypes: audited,
      delivered: expected.length - missing.length,
      missing: missing.length,
      unexpected: unexpected.length,
      requestsAccepted: receiver.accepted,
      refusedOnPurpose: receiver.refused,
      retriesOfTheSameId: receiver.accepted - receiver.deliveries.size,
      eventsUnderTwoDeliveryIds: underTwoIds,
      deliveriesByStatus: Object.fromEntries(deliveryRows.map((row) => [row.status, row.count])),
      missingWithoutDelivery: missing.length - missingDeliveries.length,
    },
    auditChain: verification,
  };
  const lost =
    lostCreations.length + lostDecisions.length + missing.length + unexpected.length + underTwoIds + (expected.length === audited ? 0 : 1);
  const ok = lost === 0 && verification.intact;

  console.log(`\nSoak of ${SECONDS} s, ${faultLog.length} faults:\n`);
  console.log(
    formatTable(
      ['at', 'fault', 'what happened'],
      faultLog.map((entry) => [entry.at, entry.fault, entry.what]),
    ),
  );
  console.log('\nResponses by operation and status (each try of a retried request counts):\n');
  console.log(
    formatTable(
      ['operation', 'status', 'responses'],
      Object.entries(statuses).flatMap(([operation, byStatus]) =>
        Object.entries(byStatus).map(([status, count]) => [operation, status, count]),
      ),
    ),
  );
  console.log('\nRequests with no answer in time, by the fault they overlapped and the web process they went to:\n');
  console.log(
    formatTable(
      ['operation', 'fault', 'web', 'requests', 'sent at (s)'],
      [...unansweredByCause].map(([cause, count]) => {
        const [operation, fault, web] = cause.split('|');
        const seconds = unanswered
          .filter((entry) => `${entry.operation}|${entry.fault}|${entry.web}` === cause)
          .map((entry) => entry.sentAtSecond);
        return [operation!, fault!, web!, count, `${Math.min(...seconds)}-${Math.max(...seconds)}`];
      }),
    ),
  );
  console.log('\nWhat was promised against what is there:\n');
  console.log(
    formatTable(
      ['figure', 'value'],
      [
        ['approvals acknowledged created', ids.length],
        ['  of them not in the database', lostCreations.length],
        ['decisions acknowledged', traffic.acknowledged.decided.size],
        ['  of them not recorded as acknowledged', lostDecisions.length],
        ['requests abandoned after 20 tries', traffic.abandoned],
        ['approvals in the database by status', JSON.stringify(figures.approvals.inDatabase)],
        ['  policy evaluations stopped (failed closed to review)', JSON.stringify(figures.approvals.evaluationsStopped)],
        ['webhook events expected (outbox)', expected.length],
        ['  audit events of those types', audited],
        ['  delivered (by event id)', figures.webhooks.delivered],
        ['  missing', missing.length],
        ['  delivered but not expected', unexpected.length],
        ['  events delivered under two delivery ids', underTwoIds],
        ['  repeated deliveries of the same id (retries)', figures.webhooks.retriesOfTheSameId],
        ['  refused by the receiver on purpose (503)', receiver.refused],
        ['audit chain intact', `${verification.intact} (${verification.count} events)`],
      ],
    ),
  );
  console.log(`\n${ok ? 'NOTHING LOST' : 'LOST OR BROKEN: see above'}`);
  console.log(JSON.stringify(figures));
  if (!ok) throw new Error('the soak lost something');
});
