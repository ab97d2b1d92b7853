// Another organization's sign-in and listing latency while one client floods sign-in.
//
//   npm run bench:signin-flood
//
// One web process (compiled, NODE_ENV=production, TRUST_PROXY=1 as behind Heroku's router). Each
// scenario runs for BENCH_SECONDS (default 20) with its floods going, while probes act as another
// organization at a steady pace whatever the floods do: its members sign in in turn (right
// password, each sign-in from an address of its own), its key lists approvals, and it registers a
// webhook whose URL is refused after a DNS lookup (expected: 422). The runner, and how a latency
// is counted, are in lib/flood-probes.ts. The last line of stdout is the figures as JSON.
import { setTimeout as sleep } from 'node:timers/promises';
import { createOrgs, deleteRedisKeys, dropDatabase, recreateDatabase } from './lib/fixtures.js';
import {
  listingProbe,
  printFigures,
  PROBE_TIMEOUT_MS,
  runScenario,
  signedUpMember,
  signInFlood,
  signInProbe,
  type Probe,
  type Rig,
  type Scenario,
  type ScenarioFigures,
} from './lib/flood-probes.js';
import { expectJson, putPolicy, requestJson } from './lib/http.js';
import { startWebServer } from './lib/processes.js';
import { envInt, runBenchmark } from './lib/run.js';

const SECONDS = envInt('BENCH_SECONDS', 20);
/** Sign-ins the flooding client keeps in flight: the 60. */
const FLOOD_CONCURRENCY = envInt('BENCH_FLOOD_CONCURRENCY', 60);
const DATABASE = 'approval_gate_bench_signin_flood';
const REDIS_PREFIX = 'agbench-signin-flood';
const PORT = 3911;
const APPROVALS_TO_LIST = 200;
/**
 * Members of the other organization who take turns signing in: a sign-in in flight counts against
 * its email until it is checked, so one member signing in every second while each takes many
 * seconds would lock their own email.
 */
const VICTIM_MEMBERS = 20;

const floodFromOneAddress = signInFlood('sign-in flood, one client address', FLOOD_CONCURRENCY, () => '203.0.113.7');
const floodFromManyAddresses = signInFlood(
  'sign-in flood, a new client address each',
  FLOOD_CONCURRENCY,
  (index) => `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
);

const PROBES: Probe[] = [
  signInProbe,
  listingProbe,
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
    figures.push(await runScenario(scenario, PROBES, rig, SECONDS));
    await sleep(3000);
  }

  console.log(`\nbench:signin-flood: ${SECONDS} s per scenario, ${FLOOD_CONCURRENCY} flooding sign-ins in flight\n`);
  printFigures(figures);
  console.log(JSON.stringify({ seconds: SECONDS, floodConcurrency: FLOOD_CONCURRENCY, scenarios: figures }));
});
