// Another organization's latency while floods run: the machinery of bench:signin-flood and
// bench:feed-replay. Each scenario runs for a number of seconds with its floods going, while
// probes act as another organization at a steady pace whatever the floods do. A probe's latency
// counts from when it was due to be sent to its answer, so a stalled server shows as the stall it is.
//
// To add a flood (or a probe), write one object of the shape below and name it in a scenario: the
// runner starts its floods, paces its probes, stops the floods, waits for every answer and reports.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatTable, round, stats } from './figures.js';
import type { BenchOrg } from './fixtures.js';
import { expectJson, requestJson } from './http.js';
import { epochMs } from './proc-stats.js';
import { log } from './run.js';

/** Long enough to see a request that waits behind every hash of a flood. */
export const PROBE_TIMEOUT_MS = 180_000;

/** What every flood and probe is given: the server, and the organization the probes act as. */
export interface Rig {
  port: number;
  victim: BenchOrg & { members: { email: string; password: string }[] };
}

/** Answers by status, and the transport errors (timeouts, resets) as status 0. */
export type StatusCounts = Record<string, number>;

/** Load that runs until `signal` aborts, and says what it sent. */
export interface Flood {
  name: string;
  run(rig: Rig, signal: AbortSignal): Promise<{ sent: number; statuses: StatusCounts }>;
}

/** One request, sent every `intervalMs` whatever the answers before it; its status is counted. */
export interface Probe {
  name: string;
  intervalMs: number;
  send(rig: Rig, index: number): Promise<number>;
}

export interface Scenario {
  name: string;
  floods: Flood[];
}

export const count = (statuses: StatusCounts, status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);

/** An address of TEST-NET-2, one per index (x-forwarded-for, read by the server with TRUST_PROXY=1). */
const testNetAddress = (index: number) => `198.51.100.${(index % 250) + 1}`;

/**
 * Sign-ins for made-up emails, `concurrency` at once, as fast as they are answered. `address`
 * chooses the client address each one claims: one client, or a new one every request.
 */
export function signInFlood(name: string, concurrency: number, address: (index: number) => string): Flood {
  return {
    name,
    async run({ port }, signal) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
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
      await Promise.all(Array.from({ length: concurrency }, client));
      agent.destroy();
      return { sent, statuses };
    },
  };
}

/** The victim's members sign in in turn (right password, each sign-in from an address of its own). */
export const signInProbe: Probe = {
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
};

/** The victim's key lists approvals. */
export const listingProbe: Probe = {
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
};

export interface ProbeFigures {
  probe: string;
  sent: number;
  statuses: StatusCounts;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface ScenarioFigures {
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

/** Runs the scenario's floods for `seconds` (after 2 s to build up) while `probes` are paced. */
export async function runScenario(scenario: Scenario, probes: readonly Probe[], rig: Rig, seconds: number): Promise<ScenarioFigures> {
  log(`${scenario.name}: ${seconds} s`);
  const stop = new AbortController();
  const floodStarted = epochMs();
  const floods = scenario.floods.map((flood) => flood.run(rig, stop.signal));
  // Let the floods build up before the first probe.
  if (floods.length > 0) await sleep(2000);
  const stopAt = setTimeout(() => stop.abort(), seconds * 1000);
  const figures = await Promise.all(probes.map((probe) => pace(probe, rig, seconds)));
  stop.abort();
  clearTimeout(stopAt);
  const floodSeconds = (epochMs() - floodStarted) / 1000;
  const floodFigures = (await Promise.all(floods)).map((result, index) => ({
    flood: scenario.floods[index]!.name,
    sent: result.sent,
    perSecond: round(result.sent / floodSeconds),
    statuses: result.statuses,
  }));
  return { scenario: scenario.name, probes: figures, floods: floodFigures };
}

/** A member of the victim org with a password, through the API as a person would. */
export async function signedUpMember(port: number, org: BenchOrg, index: number): Promise<{ email: string; password: string }> {
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

export const statusList = (statuses: StatusCounts) =>
  Object.entries(statuses)
    .map(([status, n]) => `${status === '0' ? 'error' : status}×${n}`)
    .join(' ');

/** The probes' table, and the floods' if any ran. */
export function printFigures(figures: readonly ScenarioFigures[]): void {
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
}
