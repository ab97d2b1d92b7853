// Another organization's sign-in and listing latency while one client floods sign-in and
// another replays the live feed (GET /v1/approvals/events) from the start with 1,000 streams.
//
//   npm run bench:feed-replay
//
// One web process (compiled, NODE_ENV=production, TRUST_PROXY=1). The flooding organization has
// BENCH_FEED_EVENTS (default 1,000) approvals, so its feed from the start is exactly the replay
// bound; each payload is about 1 KB. Each of BENCH_STREAMS (default 1,000) stream clients opens
// the feed with `Last-Event-ID: 0`, reads until it has every event (or `reset`), closes and opens
// again, until the scenario ends; a refused open (429) tries again after its retry-after. Scenarios:
//
// - quiet: the probes alone, the ceiling the others are compared with;
// - the sign-in flood alone, to tell its cost from the replay's;
// - the sign-in flood and 1,000 streams of one principal (the limit refuses all but 10);
// - the sign-in flood and 1,000 streams spread over 100 principals (10 each: all open), which
//   measures the cost of replaying itself (a run on code without the limit admits them all in
//   both);
// - the same 1,000 streams over 100 principals without the sign-in flood.
//
// Probes and floods are those of bench:signin-flood (lib/flood-probes.ts). BENCH_SECONDS (default
// 20) per scenario. The last line of stdout is the figures as JSON.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatTable, round } from './lib/figures.js';
import { createOrgs, createServiceKeys, deleteRedisKeys, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import {
  count,
  listingProbe,
  printFigures,
  runScenario,
  signedUpMember,
  signInFlood,
  signInProbe,
  type Flood,
  type Rig,
  type Scenario,
  type ScenarioFigures,
  type StatusCounts,
} from './lib/flood-probes.js';
import { HOST } from './lib/fixtures.js';
import { expectJson, putPolicy } from './lib/http.js';
import { mapConcurrent } from './lib/concurrency.js';
import { startWebServer } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const SECONDS = envInt('BENCH_SECONDS', 20);
const FLOOD_CONCURRENCY = envInt('BENCH_FLOOD_CONCURRENCY', 60);
const STREAMS = envInt('BENCH_STREAMS', 1000);
const PRINCIPALS = envInt('BENCH_PRINCIPALS', 100);
const FEED_EVENTS = envInt('BENCH_FEED_EVENTS', 1000);
const DATABASE = 'approval_gate_bench_feed_replay';
const REDIS_PREFIX = 'agbench-feed-replay';
const PORT = 3912;
const APPROVALS_TO_LIST = 200;
const VICTIM_MEMBERS = 20;
/** A stream that has not finished its replay by then is counted as an error and opened again. */
const STREAM_TIMEOUT_MS = 120_000;

/**
 * Opens the feed from the start and reads it until `events` approval events (or a reset) came:
 * the status of the open, and whether the replay was whole or a reset.
 */
function replayOnce(
  agent: http.Agent,
  key: string,
  events: number,
  signal: AbortSignal,
): Promise<{ status: number; outcome?: 'replayed' | 'reset'; retryAfterMs?: number }> {
  return new Promise((resolve) => {
    const req = http.get(
      {
        host: HOST,
        port: PORT,
        path: '/v1/approvals/events',
        agent,
        headers: { authorization: `Bearer ${key}`, 'last-event-id': '0' },
        signal,
        timeout: STREAM_TIMEOUT_MS,
      },
      (res) => {
        if (res.statusCode !== 200) {
          const retryAfter = Number(res.headers['retry-after']);
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ...(retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}) }));
          res.on('error', () => resolve({ status: res.statusCode ?? 0 }));
          return;
        }
        let seen = 0;
        let tail = '';
        const done = (outcome: 'replayed' | 'reset') => {
          res.destroy();
          resolve({ status: 200, outcome });
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const text = tail + chunk;
          const pattern = /event: (approval|reset)\n/g;
          let match: RegExpExecArray | null;
          let end = 0;
          while ((match = pattern.exec(text))) {
            end = pattern.lastIndex;
            if (match[1] === 'reset') return done('reset');
            if (++seen >= events) return done('replayed');
          }
          tail = text.slice(Math.max(end, text.length - 20));
        });
        res.on('error', () => resolve({ status: 0 }));
        res.on('close', () => resolve({ status: 0 }));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0 }));
  });
}

/** `streams` clients replaying the feed over and over, client i with `keys[i % keys.length]`. */
function replayFlood(name: string, streams: number, keys: () => string[]): Flood {
  return {
    name,
    async run(_rig, signal) {
      const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
      const statuses: StatusCounts = {};
      let sent = 0;
      const principals = keys();
      const client = async (index: number) => {
        while (!signal.aborted) {
          sent++;
          const { status, outcome, retryAfterMs } = await replayOnce(agent, principals[index % principals.length]!, FEED_EVENTS, signal);
          if (signal.aborted) break;
          count(statuses, status);
          if (outcome) statuses[outcome] = (statuses[outcome] ?? 0) + 1;
          if (status !== 200) await sleep(retryAfterMs ?? 1000, undefined, { signal }).catch(() => undefined);
        }
      };
      await Promise.all(Array.from({ length: streams }, (_, index) => client(index)));
      agent.destroy();
      return { sent, statuses };
    },
  };
}

runBenchmark('bench:feed-replay', 30 * 60_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
  });
  const databaseUrl = await recreateDatabase(DATABASE);
  const [victim, flooder] = await createOrgs(databaseUrl, 2);
  const serviceKeys = await createServiceKeys(databaseUrl, flooder!.orgId, PRINCIPALS, ['approvals:read']);
  const web = await startWebServer({ port: PORT, databaseUrl, redisPrefix: REDIS_PREFIX, env: { TRUST_PROXY: '1' } });
  cleanup(() => web.stop());

  log(`${FEED_EVENTS} approvals for the flooding organization, ${APPROVALS_TO_LIST} for the other`);
  const note = 'x'.repeat(1000);
  for (const [org, count] of [
    [flooder!, FEED_EVENTS],
    [victim!, APPROVALS_TO_LIST],
  ] as const) {
    await putPolicy(PORT, org.key, 'bench-review', { defaultOutcome: 'review' });
    await mapConcurrent(
      Array.from({ length: count }, (_, i) => i),
      20,
      (i) =>
        expectJson(201, {
          port: PORT,
          method: 'POST',
          path: '/v1/approvals',
          key: org.key,
          body: { action: 'refund', payload: { amount: i, note }, policyKey: 'bench-review' },
        }),
    );
  }
  const members = [];
  for (let i = 0; i < VICTIM_MEMBERS; i++) members.push(await signedUpMember(PORT, victim!, i));
  const rig: Rig = { port: PORT, victim: { ...victim!, members } };

  const signIns = signInFlood('sign-in flood, one client address', FLOOD_CONCURRENCY, () => '203.0.113.7');
  const onePrincipal = replayFlood(`${STREAMS} streams replaying, 1 principal`, STREAMS, () => [flooder!.key]);
  const spread = replayFlood(`${STREAMS} streams replaying, ${PRINCIPALS} principals`, STREAMS, () => serviceKeys);
  const scenarios: Scenario[] = [
    { name: 'quiet (ceiling)', floods: [] },
    { name: 'sign-in flood alone', floods: [signIns] },
    { name: 'sign-in flood + replay, 1 principal', floods: [signIns, onePrincipal] },
    { name: `sign-in flood + replay, ${PRINCIPALS} principals`, floods: [signIns, spread] },
    { name: `replay alone, ${PRINCIPALS} principals`, floods: [spread] },
  ];
  const probes = [signInProbe, listingProbe];

  const figures: ScenarioFigures[] = [];
  for (const scenario of scenarios) {
    figures.push(await runScenario(scenario, probes, rig, SECONDS));
    await sleep(3000);
  }

  console.log(
    `\nbench:feed-replay: ${SECONDS} s per scenario, ${FLOOD_CONCURRENCY} flooding sign-ins in flight, ${STREAMS} streams replaying ${FEED_EVENTS} events\n`,
  );
  printFigures(figures);
  const ceiling = new Map(figures[0]!.probes.map((probe) => [probe.probe, probe.p99Ms]));
  console.log('');
  console.log(
    formatTable(
      ['scenario', 'probe', 'p99 ms', 'ceiling p99 ms', 'ratio'],
      figures.slice(1).flatMap((scenario) =>
        scenario.probes.map((probe) => {
          const quiet = ceiling.get(probe.probe)!;
          return [scenario.scenario, probe.probe, probe.p99Ms, quiet, `${round(probe.p99Ms / Math.max(quiet, 1), 2)}×`];
        }),
      ),
    ),
  );
  console.log(
    JSON.stringify({
      seconds: SECONDS,
      floodConcurrency: FLOOD_CONCURRENCY,
      streams: STREAMS,
      principals: PRINCIPALS,
      feedEvents: FEED_EVENTS,
      scenarios: figures,
    }),
  );
});
