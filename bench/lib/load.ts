// Load from autocannon against one target, measured after a warm-up: what bench:creation and
// bench:checkpoints drive the API with.
import autocannon from 'autocannon';
import { HOST } from './fixtures.js';
import { log } from './run.js';
import { round } from './figures.js';
import { cpuSpentMs, machineCpuMs, processCpuMs, processGroupCpuMs } from './proc-stats.js';

/** What autocannon sends: one path and body, with the key of one org or rotating over many. */
export interface Target {
  name: string;
  port: number;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  keys?: string[];
  /** Instead of `path` and `keys`: every request takes the next path with its key, each once (see measureEach). */
  rotation?: { path: string; key: string }[];
  /** The 2xx status every response should have. */
  expectedStatus: number;
}

export interface Measurement {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** 2xx responses with another status than the expected one (e.g. 200 where 201 was due). */
  unexpected2xx: number;
  statusCodes: Record<string, number>;
  /** With a CpuWatch: CPU ms per answered request of each watched process, and the machine's busy share. */
  cpuMsPerRequest?: Record<string, number>;
  machineBusyPct?: number;
}

/**
 * Whose CPU a measurement reports per request: node processes by label and pid, the PostgreSQL
 * backends of one database, and the load generator (this process) itself.
 */
export interface CpuWatch {
  pids: Record<string, number>;
  postgresDatabase: string;
}

interface CpuReading {
  processes: Record<string, number>;
  postgres: Map<number, number>;
  redis: Map<number, number>;
  machine: { busy: number; total: number };
}

function readCpu(watch: CpuWatch): CpuReading {
  const processes: Record<string, number> = { 'load generator': processCpuMs(process.pid) };
  for (const [label, pid] of Object.entries(watch.pids)) processes[label] = processCpuMs(pid);
  // A backend's command line shows its database between spaces.
  return {
    processes,
    postgres: processGroupCpuMs('postgres', ` ${watch.postgresDatabase} `),
    redis: processGroupCpuMs('redis-server'),
    machine: machineCpuMs(),
  };
}

function cpuPerRequest(from: CpuReading, to: CpuReading, requests: number) {
  const perRequest = (ms: number) => round(ms / Math.max(1, requests), 3);
  const cpuMsPerRequest: Record<string, number> = {};
  for (const [label, ms] of Object.entries(to.processes)) cpuMsPerRequest[label] = perRequest(ms - from.processes[label]!);
  cpuMsPerRequest.postgres = perRequest(cpuSpentMs(from.postgres, to.postgres));
  cpuMsPerRequest.redis = perRequest(cpuSpentMs(from.redis, to.redis));
  // Everything the machine did, whoever did it: PostgreSQL's own background processes (WAL writer, checkpointer) included.
  cpuMsPerRequest.machine = perRequest(to.machine.busy - from.machine.busy);
  const machineBusyPct = round((100 * (to.machine.busy - from.machine.busy)) / (to.machine.total - from.machine.total), 0);
  return { cpuMsPerRequest, machineBusyPct };
}

export interface LoadSettings {
  connections: number;
  warmupS: number;
  durationS: number;
}

/** How long a load runs: for a time, or until each request of the target's rotation was sent once. */
type Extent = { durationS: number } | { amount: number };

function autocannonOptions(target: Target, connections: number, extent: Extent): autocannon.Options {
  const keys = target.keys ?? [];
  const headers: Record<string, string> = target.body ? { 'content-type': 'application/json' } : {};
  if (keys.length === 1) headers.authorization = `Bearer ${keys[0]}`;
  let next = 0;
  // Across all connections, every request takes the next org's key, or the next path and key, in turn.
  const setupRequest: autocannon.Request['setupRequest'] = target.rotation
    ? (request) => {
        const { path, key } = target.rotation![next++ % target.rotation!.length]!;
        return { ...request, path, headers: { ...request.headers, authorization: `Bearer ${key}` } };
      }
    : keys.length > 1
      ? (request) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${keys[next++ % keys.length]}` } })
      : undefined;
  return {
    url: `http://${HOST}:${target.port}${target.path}`,
    method: target.method,
    body: target.body,
    headers,
    connections,
    ...('amount' in extent ? { amount: extent.amount } : { duration: extent.durationS }),
    requests: setupRequest ? [{ setupRequest }] : undefined,
  };
}

async function runAutocannon(target: Target, connections: number, extent: Extent, watch?: CpuWatch): Promise<Measurement> {
  const cpuFrom = watch && readCpu(watch);
  const result = await autocannon(autocannonOptions(target, connections, extent));
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, Number(stats.count ?? 0)]),
  );
  const unexpected2xx = Object.entries(statusCodes)
    .filter(([code]) => code.startsWith('2') && Number(code) !== target.expectedStatus)
    .reduce((sum, [, count]) => sum + count, 0);
  return {
    // A run by amount ends within its last second, which the per-second average would count whole.
    rps: 'amount' in extent ? result.requests.total / result.duration : result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    unexpected2xx,
    statusCodes,
    ...(cpuFrom && cpuPerRequest(cpuFrom, readCpu(watch!), result.requests.total)),
  };
}

export const problemsOf = (m: Measurement) => m.non2xx + m.errors + m.timeouts + m.unexpected2xx;
const describeProblems = (m: Measurement) =>
  `non-2xx ${m.non2xx}, errors ${m.errors}, timeouts ${m.timeouts}, unexpected 2xx ${m.unexpected2xx}, status codes ${JSON.stringify(m.statusCodes)}`;

/** A warm-up (not counted, but its problems are shown), then the measurement. */
export async function measure(target: Target, settings: LoadSettings, watch?: CpuWatch): Promise<Measurement> {
  const warmup = await runAutocannon(target, settings.connections, { durationS: settings.warmupS });
  if (problemsOf(warmup) > 0) log(`!!! ${target.name}: problems during warm-up: ${describeProblems(warmup)}`);
  return report(target, await runAutocannon(target, settings.connections, { durationS: settings.durationS }, watch));
}

/**
 * Each request of the target's rotation sent once, with no warm-up: for requests that can be made
 * only once each, like deciding an approval.
 */
export async function measureEach(target: Target, connections: number, watch?: CpuWatch): Promise<Measurement> {
  return report(target, await runAutocannon(target, connections, { amount: target.rotation!.length }, watch));
}

function report(target: Target, measured: Measurement): Measurement {
  const cpu = measured.cpuMsPerRequest
    ? `; CPU ms per request: ${Object.entries(measured.cpuMsPerRequest)
        .map(([label, ms]) => `${label} ${ms}`)
        .join(', ')} (machine ${measured.machineBusyPct}% busy)`
    : '';
  log(
    `${target.name.padEnd(26)} ${round(measured.rps, 0)} req/s, p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms${cpu}` +
      (problemsOf(measured) > 0 ? `  !!! ${describeProblems(measured)}` : ''),
  );
  return measured;
}
