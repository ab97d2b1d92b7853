// A rolling deploy under traffic: the previous release's web and worker processes, then the new
// release's migrations, then the processes replaced one at a time, old and new side by side for a
// while. It runs on a PostgreSQL cluster and a Redis of its own, like `npm run soak`, and asserts
// that nothing acknowledged is lost, every webhook arrives once, no request is answered 5xx outside
// a process's restart, and every long-poll on an approval decided during its wait is woken.
//
//   npm run soak:upgrade                         previous release: git merge-base HEAD main (HEAD~1 on main)
//   npm run soak:upgrade -- acaf9db~1            any commit or tag
//   SOAK_UPGRADE_STEP_SECONDS=10 SOAK_CREATIONS_PER_SECOND=20 SOAK_BASE_PORT=4720 npm run soak:upgrade
//
// Both releases are checked out into temporary worktrees (the new one is HEAD: commit first) and
// compiled there with the current node_modules, so releases whose dependencies differ need an
// `npm install` in their worktree instead. The last line of stdout is the figures as JSON.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { SCOPES } from '../src/modules/orgs/tenant.js';
import { formatTable } from './lib/figures.js';
import { expectJson, putPolicy } from './lib/http.js';
import { answers200, startNodeProcess, startWorker, type NodeProcess } from './lib/processes.js';
import { envInt, envNumber, log, runBenchmark } from './lib/run.js';
import { createPostgresCluster } from './soak/postgres-cluster.js';
import { startRedisServer } from './soak/redis-server.js';
import { drainOwedWebhooks, startTrafficRig } from './soak/traffic-rig.js';

const STEP_SECONDS = envInt('SOAK_UPGRADE_STEP_SECONDS', 10);
const CREATIONS_PER_SECOND = envNumber('SOAK_CREATIONS_PER_SECOND', 20);
const LONG_POLLERS = envInt('SOAK_LONG_POLLERS', 10);
const BASE_PORT = envInt('SOAK_BASE_PORT', 4720);
const DRAIN_SECONDS = envInt('SOAK_DRAIN_SECONDS', 120);
/** A 5xx this long after a process's restart ended is not put down to it. */
const RESTART_MARGIN_MS = 3_000;
/** A long-poll answered this long after its approval was decided was woken late (or not at all). */
const WOKEN_WITHIN_MS = 1_000;
/** The traffic's long-polls ask for `wait=5`: one answered this long after it was sent ran out its wait. */
const WAITED_OUT_MS = 4_900;

const PORTS = { postgres: BASE_PORT, redis: BASE_PORT + 1, proxy: BASE_PORT + 2, webs: [BASE_PORT + 3, BASE_PORT + 4] };
const DATABASE = 'approval_gate';
const POLICY_KEY = 'soak';
const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();

function previousRelease(): string {
  if (process.argv[2]) return process.argv[2];
  const head = git('rev-parse', 'HEAD');
  const base = git('merge-base', 'HEAD', 'main');
  return base === head ? git('rev-parse', 'HEAD~1') : base;
}

interface Release {
  label: 'old' | 'new';
  commit: string;
  dir: string;
}

/** The release checked out in a temporary worktree and compiled (server and workers; the console is not needed). */
function prepare(label: Release['label'], commit: string): Release {
  const dir = mkdtempSync(path.join(tmpdir(), `ag-upgrade-${label}-`));
  git('worktree', 'add', '--detach', dir, commit);
  symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'));
  const run = (command: string, args: string[]) => execFileSync(command, args, { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  run(process.execPath, ['prisma/generate-client.mjs']);
  run(process.execPath, [path.join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
  return { label, commit: git('rev-parse', '--short', commit), dir };
}

/** Compiling two checkouts on a busy machine takes many minutes: the deadline leaves room for them. */
const BUILD_ALLOWANCE_S = 2_700;

runBenchmark('soak:upgrade', (STEP_SECONDS * 12 + DRAIN_SECONDS + BUILD_ALLOWANCE_S) * 1000, async (cleanup) => {
  const logDir = mkdtempSync(path.join(tmpdir(), 'ag-upgrade-logs-'));
  const oldCommit = previousRelease();
  log(`from ${oldCommit} to HEAD; building both; process logs in ${logDir}`);
  const releases = { old: prepare('old', oldCommit), new: prepare('new', 'HEAD') };
  for (const release of Object.values(releases)) cleanup(() => git('worktree', 'remove', '--force', release.dir));
  log(`old ${releases.old.commit} in ${releases.old.dir}, new ${releases.new.commit} in ${releases.new.dir}`);

  const cluster = await createPostgresCluster(PORTS.postgres);
  cleanup(() => cluster.destroy());
  const redis = await startRedisServer(PORTS.redis);
  cleanup(() => redis.stop());
  const databaseUrl = cluster.url(DATABASE);
  const env = {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '10',
    REDIS_URL: redis.url,
    REDIS_PREFIX: 'ag',
    LOG_LEVEL: 'info',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_BACKOFF_SCALE: '0.001',
    SHUTDOWN_TIMEOUT_MS: '10000',
  };
  const node = (release: Release, script: string, ...args: string[]) =>
    execFileSync(process.execPath, [path.join(release.dir, script), ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  node(releases.old, 'dist/src/db/migrate-cli.js', 'deploy');
  const { orgId } = JSON.parse(node(releases.old, 'dist/src/cli/index.js', 'org:create', '--name', 'upgrade', '--plan', 'pro')) as {
    orgId: string;
  };
  const newKey = () =>
    (JSON.parse(node(releases.old, 'dist/src/cli/index.js', 'key:create', '--org', orgId, '--scopes', SCOPES.join(','))) as { key: string })
      .key;
  const [key, reviewerKey] = [newKey(), newKey()];
  log(`own PostgreSQL on ${PORTS.postgres} migrated by ${releases.old.commit}, own Redis on ${PORTS.redis}; organization ${orgId}`);

  let generation = 0;
  const startWeb = (release: Release, index: number) =>
    startNodeProcess({
      label: `web ${index} (${release.label})`,
      args: [path.join(release.dir, 'dist/src/server.js')],
      env: { ...env, PORT: String(PORTS.webs[index]) },
      port: PORTS.webs[index],
      stdoutFile: path.join(logDir, `web-${index}-${release.label}-${generation++}.log`),
      isReady: () => answers200(PORTS.webs[index]!, '/readyz'),
    });
  const startWorkerOf = (release: Release, index: number) =>
    startWorker({
      label: `worker ${index} (${release.label})`,
      args: [path.join(release.dir, 'dist/workers/index.js')],
      env,
      stdoutFile: path.join(logDir, `worker-${index}-${release.label}-${generation++}.log`),
    });
  // Stopped at the end, or when the run is cut short while they start.
  const webs: NodeProcess[] = [];
  const workers: (NodeProcess | null)[] = [null, null];
  cleanup(() => Promise.all([...webs, ...workers].map((child) => child?.stop())));
  webs.push(await startWeb(releases.old, 0));
  webs.push(await startWeb(releases.old, 1));
  workers[0] = await startWorkerOf(releases.old, 0);
  const { port, receiver, traffic } = await startTrafficRig({
    proxyPort: PORTS.proxy,
    webPorts: PORTS.webs,
    key,
    reviewerKey,
    policyKey: POLICY_KEY,
    receiverFailEvery: 20,
    creationsPerSecond: CREATIONS_PER_SECOND,
    longPollers: LONG_POLLERS,
    cleanup,
  });
  const startedAt = Date.now();
  const at = () => `${Math.round((Date.now() - startedAt) / 1000)} s`;
  const steps: { at: string; what: string; startedAt: number; endedAt: number; restart: boolean }[] = [];
  const step = async (what: string, restart: boolean, action: () => Promise<unknown>) => {
    const stepStartedAt = Date.now();
    await action();
    steps.push({ at: at(), what, startedAt: stepStartedAt, endedAt: Date.now(), restart });
    log(`${at()}: ${what}`);
    await sleep(STEP_SECONDS * 1000);
  };
  const replaceWeb = async (index: number) => {
    await webs[index]!.stop();
    webs[index] = await startWeb(releases.new, index);
  };

  traffic.start();
  await step(`traffic on the old release (${releases.old.commit})`, false, async () => undefined);
  await step('release phase: the new migrations applied', false, async () => node(releases.new, 'dist/src/db/migrate-cli.js', 'deploy'));
  await step('new worker 1 started beside old worker 0', false, async () => (workers[1] = await startWorkerOf(releases.new, 1)));
  await step('web 1 replaced by the new release (old web 0 and new web 1 side by side)', true, () => replaceWeb(1));
  await step('still side by side', false, async () => undefined);
  await step('old worker 0 stopped', false, async () => {
    await workers[0]!.stop();
    workers[0] = null;
  });
  await step('web 0 replaced by the new release', true, () => replaceWeb(0));
  log(`${at()}: stopping the traffic`);
  await traffic.stop();

  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  cleanup(() => db.end());
  const expected = await drainOwedWebhooks(db, orgId, receiver, DRAIN_SECONDS);

  const ids = [...traffic.acknowledged.created.keys()];
  const { rows: stored } = await db.query<{ id: string; status: string; decided_at: Date | null }>(
    'SELECT id, status, decided_at FROM approvals WHERE org_id = $1',
    [orgId],
  );
  const byId = new Map(stored.map((row) => [row.id, row]));
  const lostCreations = ids.filter((id) => !byId.has(id)).length;
  const lostDecisions = [...traffic.acknowledged.decided].filter(([id, verdict]) => byId.get(id)?.status !== verdict).length;
  const missing = expected.filter((id) => !receiver.deliveries.has(id)).length;
  const underTwoIds = [...receiver.deliveries.values()].filter((deliveryIds) => deliveryIds.size > 1).length;

  const duringRestart = (time: number) =>
    steps.some((entry) => entry.restart && time >= entry.startedAt && time <= entry.endedAt + RESTART_MARGIN_MS);
  const serverErrorsOutside = traffic.serverErrors.filter((error) => !duringRestart(error.at));
  // A long-poll whose approval was decided while it waited, answered only when its wait ran out.
  const decidedDuring = traffic.longPolls.filter((poll) => {
    const decidedAt = byId.get(poll.id)?.decided_at?.getTime();
    return decidedAt !== undefined && decidedAt >= poll.sentAt && decidedAt <= poll.answeredAt;
  });
  const wokenLate = decidedDuring.filter((poll) => poll.answeredAt - byId.get(poll.id)!.decided_at!.getTime() > WOKEN_WITHIN_MS);
  // Answered late and only when its wait ran out: no wake-up reached it. Late but before the end of
  // its wait, it was woken, by a process the machine's load held up.
  const notWoken = wokenLate.filter((poll) => poll.answeredAt - poll.sentAt >= WAITED_OUT_MS);

  const figures = {
    from: releases.old.commit,
    to: releases.new.commit,
    steps: steps.map(({ at: when, what }) => ({ at: when, what })),
    responses: Object.fromEntries(
      [...traffic.statuses].map(([operation, byStatus]) => [operation, Object.fromEntries([...byStatus].sort())]),
    ),
    approvals: { acknowledgedCreated: ids.length, acknowledgedDecided: traffic.acknowledged.decided.size, lostCreations, lostDecisions },
    webhooks: { expected: expected.length, delivered: expected.length - missing, missing, eventsUnderTwoDeliveryIds: underTwoIds },
    serverErrors: { total: traffic.serverErrors.length, outsideRestarts: serverErrorsOutside.length },
    longPolls: {
      answered: traffic.longPolls.length,
      decidedDuringTheirWait: decidedDuring.length,
      wokenLate: wokenLate.map((poll) => ({
        sentToDecidedMs: byId.get(poll.id)!.decided_at!.getTime() - poll.sentAt,
        decidedToAnsweredMs: poll.answeredAt - byId.get(poll.id)!.decided_at!.getTime(),
      })),
      notWoken: notWoken.length,
    },
    abandonedAfterRetries: traffic.abandoned,
  };
  console.log(`\nRolling upgrade ${releases.old.commit} -> ${releases.new.commit}:\n`);
  console.log(
    formatTable(
      ['at', 'step'],
      steps.map((entry) => [entry.at, entry.what]),
    ),
  );
  console.log(
    '\n' +
      formatTable(
        ['figure', 'value'],
        [
          ['approvals acknowledged created', ids.length],
          ['  of them not in the database', lostCreations],
          ['decisions acknowledged', traffic.acknowledged.decided.size],
          ['  of them not recorded as acknowledged', lostDecisions],
          ['webhook events expected', expected.length],
          ['  missing', missing],
          ['  events delivered under two delivery ids', underTwoIds],
          ['5xx answers', traffic.serverErrors.length],
          ['  outside a restart window', serverErrorsOutside.length],
          ['long-polls answered', traffic.longPolls.length],
          ['  on an approval decided during their wait', decidedDuring.length],
          [`  of them answered more than ${WOKEN_WITHIN_MS} ms after the decision`, wokenLate.length],
          ['  of them not woken (answered only when the wait ran out)', notWoken.length],
          ['requests abandoned after 20 tries', traffic.abandoned],
        ],
      ),
  );
  const ok = lostCreations + lostDecisions + missing + underTwoIds + serverErrorsOutside.length + notWoken.length + traffic.abandoned === 0;
  console.log(`\n${ok ? 'UPGRADE CLEAN' : 'LOST OR BROKEN: see above'}`);
  console.log(JSON.stringify(figures));
  if (!ok) throw new Error('the rolling upgrade lost or broke something');
});
