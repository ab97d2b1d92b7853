// Another organization's sign-in and listing latency while one client floods sign-in.
//
//   npm run bench:signin-flood
//
// One web process (compiled, NODE_ENV=production, TRUST_PROXY=1 as behind Heroku's router). Each
// scenario runs for BENCH_SECONDS (default 20) with its floods going, while probes act as another
// organization at a steady pace whatever the floods do: its members sign in in turn (right
// password, each sign-in from an address of its own), its key lists approvals, and it registers a
// webhook whose URL is refused after a DNS lookup (expected: 422). A probe's latency counts
// from when it was due to be sent to its answer, so a stalled server shows as the stall it is.
//
// To add a flood (or a probe), write one object of the shape below and name it in a scenario: the
// runner starts its floods, paces its probes, stops the floods, waits for every answer and reports.
// The last line of stdout is the figures as JSON.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatTable, round, stats } from './lib/figures.js';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase, type BenchOrg } from './lib/fixtures.js';
import { expectJson, putPolicy, requestJson } from './lib/http.js';
import { epochMs } from './lib/proc-stats.js';
import { startWebServer } from './lib/processes.js';
import { envInt, log, runBenchmark } from './lib/run.js';

const SECONDS = envInt('BENCH_SECONDS', 20);
/** Sign-ins the flooding client keeps in flight: the 60. */
const FLOOD_CONCURRENCY = envInt('BENCH_FLOOD_CONCURRENCY', 60);
const DATABASE = 'approval_gate_bench_signin_flood';
const REDIS_PREFIX = 'agbench-signin-flood';
const PORT = 3911;
/** Long enough to see a sign-in that waits behind every hash of the flood. */
const PROBE_TIMEOUT_MS = 180_000;
const APPROVALS_TO_LIST = 200;
/**
 * Members of the other organization who take turns signing in: a sign-in in flight counts against
 * its email until it is checked, so one member signing in every second while each takes many
 * seconds would lock their own email.
 */
const VICTIM_MEMBERS = 20;

/** What every flood and probe is given: the server, and the organization the probes act as. */
interface Rig {
  port: number;
  victim: BenchOrg & { members: { email: string; password: string }[] };
}

/** Answers by status, and the transport errors (timeouts, resets) as status 0. */
type StatusCounts = Record<string, number>;

/** Load that runs until `signal` aborts, and says what it sent. */
interface Flood {
  name: string;
  run(rig: Rig, signal: AbortSignal): Promise<{ sent: number; statuses: StatusCounts }>;
}

/** One request, sent every `intervalMs` whatever the answers before it; its status is counted. */
interface Probe {
  name: string;
  intervalMs: number;
  send(rig: Rig, index: number): Promise<number>;
}

interface Scenario {
  name: string;
  floods: Flood[];
}

const count = (statuses: StatusCounts, status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);

/** An address of TEST-NET-2, one per index (x-forwarded-for, read by the server with TRUST_PROXY=1). */
const testNetAddress = (index: number) => `198.51.100.${(index % 250) + 1}`;

/**
 * Sign-ins for made-up emails, `concurrency` at once, as fast as they are answered. `address`
 * chooses the client address each one claims: one client, or a new one every request.
 */
function signInFlood(name: string, address: (index: number) => string): Flood {
  return {
    name,
    async run({ port }, signal) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: FLOOD_CONCURRENCY });
      const statuses: StatusCounts = {};
      let sent = 0;
      const client = async () => {
        while (!signal.aborted) {
          const index = sent++;
          const status = await requestJson({
            port,
            method: 'POST',
            path: '/v1/session',
            body: { email: `nobody-${randomBytes(6).toString('hex')}@flood.test`, password: 'made-up password' },
            headers: { 'x-forwarded-for': address(index) },
            agent,
            timeoutMs: PROBE_TIMEOUT_MS,
          }).then(
            (response) => response.status,
            () => 0,
          );
          count(statuses, status);
        }
      };
      await Promise.all(Array.from({ length: FLOOD_CONCURRENCY }, client));
      agent.destroy();
      return { sent, statuses };
    },
  };
}

const floodFromOneAddress = signInFlood('sign-in flood, one client address', () => '203.0.113.7');
const floodFromManyAddresses = signInFlood(
  'sign-in flood, a new client address each',
  (index) => `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
);

const PROBES: Probe[] = [
  {
    name: 'sign-in (another org)',
    intervalMs: 1000,
    async send({ port, victim }, index) {
      const response = await requestJson({
        port,
        method: 'POST',
        path: '/v1/session',
        body: victim.members[index % victim.members.length],
        headers: { 'x-forwarded-for': testNetAddress(index) },
        timeoutMs: PROBE_TIMEOUT_MS,
      });
      return response.status;
    },
  },
  {
    name: 'GET /v1/approvals (another org)',
    intervalMs: 200,
    async send({ port, victim }) {
      const response = await requestJson({
        port,
        method: 'GET',
        path: '/v1/approvals?limit=50',
        key: victim.key,
        timeoutMs: PROBE_TIMEOUT_MS,
      });
      return response.status;
    },
  },
  {
    // The webhook URL check resolves the host with dns.lookup, on libuv's thread pool: what would wait behind hashing there.
    name: 'webhook URL check, a DNS lookup (another org)',
    intervalMs: 500,
    async send({ port, victim }) {
      const body = { url: 'http://localhost/hook', events: ['approval.approved'] };
      const response = await requestJson({
        port,
        method: 'POST',
        path: '/v1/webhooks',
        key: victim.key,
        body,
        timeoutMs: PROBE_TIMEOUT_MS,
      });
      return response.status;
    },
  },
];

const SCENARIOS: Scenario[] = [
  { name: 'quiet', floods: [] },
  { name: 'flood from one address', floods: [floodFromOneAddress] },
  { name: 'flood from many addresses', floods: [floodFromManyAddresses] },
];

interface ProbeFigures {
  probe: string;
  sent: number;
  statuses: StatusCounts;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

interface ScenarioFigures {
  scenario: string;
  probes: ProbeFigures[];
  floods: { flood: string; sent: number; perSecond: number; statuses: StatusCounts }[];
}

/** Sends `probe` every interval for `seconds`, each timed from when it was due; resolves once all are answered. */
async function pace(probe: Probe, rig: Rig, seconds: number): Promise<ProbeFigures> {
  const started = epochMs();
  const total = Math.floor((seconds * 1000) / probe.intervalMs);
  const latencies: number[] = [];
  const statuses: StatusCounts = {};
  const answers: Promise<void>[] = [];
  for (let index = 0; index < total; index++) {
    const due = started + index * probe.intervalMs;
    const wait = due - epochMs();
    if (wait > 0) await sleep(wait);
    answers.push(
      probe.send(rig, index).then(
        (status) => {
          count(statuses, status);
          latencies.push(epochMs() - due);
        },
        () => void count(statuses, 0),
      ),
    );
  }
  await Promise.all(answers);
  const { p50, p99, max } = stats(latencies);
  return { probe: probe.name, sent: total, statuses, p50Ms: p50, p99Ms: p99, maxMs: max };
}

async function runScenario(scenario: Scenario, rig: Rig): Promise<ScenarioFigures> {
  log(`${scenario.name}: ${SECONDS} s`);
  const stop = new AbortController();
  const floodStarted = epochMs();
  const floods = scenario.floods.map((flood) => flood.run(rig, stop.signal));
  // Let the floods build up before the first probe.
  if (floods.length > 0) await sleep(2000);
  const stopAt = setTimeout(() => stop.abort(), SECONDS * 1000);
  const probes = await Promise.all(PROBES.map((probe) => pace(probe, rig, SECONDS)));
  stop.abort();
  clearTimeout(stopAt);
  const floodSeconds = (epochMs() - floodStarted) / 1000;
  const floodFigures = (await Promise.all(floods)).map((result, index) => ({
    flood: scenario.floods[index]!.name,
    sent: result.sent,
    perSecond: round(result.sent / floodSeconds),
    statuses: result.statuses,
  }));
  return { scenario: scenario.name, probes, floods: floodFigures };
}

/** A member of the victim org with a password, through the API as a person would. */
async function signedUpMember(port: number, org: BenchOrg, index: number): Promise<{ email: string; password: string }> {
  const email = `victim-${randomBytes(4).toString('hex')}@bench.test`;
  const password = 'the right password';
  const invited = await expectJson(201, { port, method: 'POST', path: '/v1/members', key: org.key, body: { email, role: 'reviewer' } });
  const token = new URL(invited.inviteUrl as string).pathname.split('/').pop()!;
  await expectJson(200, {
    port,
    method: 'POST',
    path: '/v1/invites/accept',
    body: { token, password },
    headers: { 'x-forwarded-for': `192.0.2.${index + 1}` },
  });
  return { email, password };
}

const statusList = (statuses: StatusCounts) =>
  Object.entries(statuses)
    .map(([status, n]) => `${status === '0' ? 'error' : status}×${n}`)
    .join(' ');

runBenchmark('bench:signin-flood', 30 * 60_000, async (cleanup) => {
  cleanup(async () => {
    await dropDatabase(DATABASE);
    await deleteRedisKeys(REDIS_PREFIX);
  });
  const databaseUrl = await recreateDatabase(DATABASE);
  const [org] = await createOrgs(databaseUrl, 1);
  const web = await startWebServer({ port: PORT, databaseUrl, redisPrefix: REDIS_PREFIX, env: { TRUST_PROXY: '1' } });
  cleanup(() => web.stop());
  await putPolicy(PORT, org!.key, 'bench-review', { defaultOutcome: 'review' });
  for (let i = 0; i < APPROVALS_TO_LIST; i++) {
    await expectJson(201, {
      port: PORT,
      method: 'POST',
      path: '/v1/approvals',
      key: org!.key,
      body: { action: 'refund', payload: { amount: i }, policyKey: 'bench-review' },
    });
  }
  const members = [];
  for (let i = 0; i < VICTIM_MEMBERS; i++) members.push(await signedUpMember(PORT, org!, i));
  const rig: Rig = { port: PORT, victim: { ...org!, members } };

  const figures: ScenarioFigures[] = [];
  for (const scenario of SCENARIOS) {
    figures.push(await runScenario(scenario, rig));
    await sleep(3000);
  }

  console.log(`\nbench:signin-flood: ${SECONDS} s per scenario, ${FLOOD_CONCURRENCY} flooding sign-ins in flight\n`);
  console.log(
    formatTable(
      ['scenario', 'probe', 'p50 ms', 'p99 ms', 'max ms', 'answers'],
      figures.flatMap((scenario) =>
        scenario.probes.map((probe) => [scenario.scenario, probe.probe, probe.p50Ms, probe.p99Ms, probe.maxMs, statusList(probe.statuses)]),
      ),
    ),
  );
  const floods = figures.flatMap((scenario) => scenario.floods);
  if (floods.length > 0) {
    console.log('');
    console.log(
      formatTable(
        ['flood', 'sent', 'per s', 'answers'],
        floods.map((flood) => [flood.flood, flood.sent, flood.perSecond, statusList(flood.statuses)]),
      ),
    );
  }
  console.log(JSON.stringify({ seconds: SECONDS, floodConcurrency: FLOOD_CONCURRENCY, scenarios: figures }));
});
