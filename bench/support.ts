// Helpers shared by the benchmarks: a bench database and Redis prefix, server child processes,
// small HTTP and statistics utilities, and a cleanup that always runs (error, signal or deadline).
// Everything here talks to 127.0.0.1 only.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createDataLayer } from '../src/data/database.js';
import { applyMigrations } from '../src/db/migrator.js';
import { OrgService } from '../src/modules/orgs/org-service.js';
import { SCOPES } from '../src/modules/orgs/tenant.js';

export const HOST = '127.0.0.1';
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
const PG_SERVER_URL = `postgresql://postgres@${HOST}:5432`;
const REDIS_URL = `redis://${HOST}:6379`;

/** Progress, on stderr: stdout carries the results, with the JSON figures as its last line. */
export const log = (message: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);

/** A positive number from the environment, or the fallback. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got '${raw}'`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Lifecycle: run the benchmark, then the cleanups, then exit, whatever happens.

export type Cleanup = (work: () => Promise<unknown> | unknown) => void;

/**
 * Runs `body`, then every registered cleanup (last registered first), then exits. A deadline,
 * SIGINT or SIGTERM stops the benchmark the same way, so the script always ends by itself.
 */
export function runBenchmark(name: string, deadlineMs: number, body: (cleanup: Cleanup) => Promise<void>): void {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  let finishing = false;
  const finish = async (code: number, reason?: unknown) => {
    if (finishing) return;
    finishing = true;
    if (reason !== undefined)
      console.error(`\n${name}: FAILED: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
    for (const work of cleanups.reverse()) {
      try {
        await work();
      } catch (error) {
        console.error(`${name}: cleanup step failed: ${String(error)}`);
      }
    }
    process.exit(code);
  };
  const deadline = setTimeout(() => void finish(1, `deadline of ${Math.round(deadlineMs / 1000)} s reached`), deadlineMs);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void finish(130, `interrupted by ${signal}`));
  body((work) => cleanups.push(work)).then(
    () => {
      clearTimeout(deadline);
      return finish(0);
    },
    (error: unknown) => finish(1, error),
  );
}

// ---------------------------------------------------------------------------------------------
// Postgres and Redis

export function databaseUrl(name: string): string {
  return `${PG_SERVER_URL}/${name}`;
}

async function onServer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(name: string): Promise<void> {
  await onServer(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

/** Drops the database if it is there and makes it again from the migrations; returns its URL. */
export async function recreateDatabase(name: string): Promise<string> {
  await dropDatabase(name);
  const url = databaseUrl(name);
  await applyMigrations(url);
  return url;
}

export async function deleteRedisKeys(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    await redis.connect();
    for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 500 })) {
      const batch = keys as string[];
      if (batch.length > 0) deleted += await redis.unlink(...batch);
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export interface BenchOrg {
  orgId: string;
  key: string;
}

/** Organizations on the `pro` plan (no monthly limit), each with one key holding every scope. */
export async function createOrgs(dbUrl: string, count: number): Promise<BenchOrg[]> {
  const data = createDataLayer(dbUrl, { size: 5, connectTimeoutMs: 5_000, queryTimeoutMs: 600_000 }, () => {});
  try {
    const orgs = new OrgService(data);
    return await mapConcurrent(
      Array.from({ length: count }, (_, i) => i),
      5,
      async (i) => {
        const { orgId } = await orgs.createOrganization({ name: `bench-org-${i}`, plan: 'pro', adminEmails: [] });
        const { key } = await orgs.createApiKey({ orgId, scopes: [...SCOPES], name: 'bench' });
        return { orgId, key };
      },
    );
  } finally {
    await data.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Server child processes

export interface ServerProcess {
  /** The pid of the node process itself (not a wrapper), for /proc sampling. */
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** The API (src/server.ts) with its logs at `info` sent to /dev/null, as in production. */
/**
 * The API as production runs it: compiled (`npm run build`, once per bench process), so the
 * figures include no TypeScript loader.
 */
export function startWebServer(options: { port: number; databaseUrl: string; redisPrefix: string }): Promise<ServerProcess> {
  buildOnce();
  return startNodeServer(['dist/src/server.js'], options.port, '/readyz', {
    NODE_ENV: 'production',
    PORT: String(options.port),
    DATABASE_URL: options.databaseUrl,
    REDIS_URL,
    REDIS_PREFIX: options.redisPrefix,
    LOG_LEVEL: 'info',
  });
}

let built = false;
function buildOnce(): void {
  if (built) return;
  log('npm run build');
  const build = spawnSync('npm', ['run', 'build'], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`);
  built = true;
}

/** The bare Express 5 "hello JSON" server: the ceiling the API is compared with. */
export function startHelloServer(port: number): Promise<ServerProcess> {
  return startNodeServer(['--import', 'tsx', 'bench/hello-server.ts'], port, '/', { PORT: String(port) });
}

/**
 * Starts `node --import tsx <script>` so that the child *is* the node process. It goes through
 * bash only to raise its open-files limit to the hard limit (`exec` keeps the pid). stdout (the
 * request log) goes to /dev/null; the tail of stderr is kept to explain a failed start.
 */
async function startNodeServer(nodeArgs: string[], port: number, readyPath: string, env: Record<string, string>): Promise<ServerProcess> {
  const script = nodeArgs.at(-1)!;
  await assertPortFree(port);
  const child = spawn('bash', ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, ...nodeArgs], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = once(child, 'exit');
  let stopping = false;
  const stop = () => {
    stopping = true;
    return stopChild(child);
  };
  try {
    await waitUntilReady(child, exited, port, readyPath);
  } catch (error) {
    await stop();
    throw new Error(`${script} did not start: ${String(error)}\n--- its stderr ---\n${stderr}`);
  }
  void exited.then(() => {
    if (!stopping)
      log(`!!! ${script} (pid ${child.pid}) exited unexpectedly: code ${child.exitCode}, signal ${child.signalCode}\n${stderr}`);
  });
  return { pid: child.pid!, port, stop };
}

async function waitUntilReady(child: ChildProcess, exited: Promise<unknown>, port: number, path: string): Promise<void> {
  const giveUpAt = Date.now() + 60_000;
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  while (Date.now() < giveUpAt) {
    if (hasExited) throw new Error(`exited with code ${child.exitCode} (signal ${child.signalCode})`);
    const status = await requestJson({ port, method: 'GET', path }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(200);
  }
  throw new Error(`not ready on port ${port} after 60 s`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

async function assertPortFree(port: number): Promise<void> {
  const probe = net.createServer();
  try {
    probe.listen(port);
    await once(probe, 'listening');
  } catch (error) {
    throw new Error(`port ${port} is already in use (${String(error)}); is another benchmark running?`);
  } finally {
    probe.close();
  }
}

/** Resident set size of a process, in MB, from /proc/<pid>/status. */
export function readRssMb(pid: number | 'self'): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) / 1024;
}

/** The soft open-files limit of a process, from /proc/<pid>/limits. */
export function readOpenFilesLimit(pid: number | 'self'): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  if (!match) throw new Error(`no open-files limit for process ${pid}`);
  return match[1] === 'unlimited' ? Infinity : Number(match[1]);
}

/** User + system CPU time of a process, in ms, from /proc/<pid>/stat. */
function readCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/**
 * Resolves once the process has used under `maxCpuFraction` of one core during a whole `windowMs`,
 * i.e. it has worked through everything it was sent. Throws after `timeoutMs`.
 */
export async function waitUntilIdle(pid: number, { windowMs = 1000, maxCpuFraction = 0.05, timeoutMs = 60_000 } = {}): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  let before = readCpuMs(pid);
  while (Date.now() < giveUpAt) {
    await sleep(windowMs);
    const after = readCpuMs(pid);
    if (after - before <= windowMs * maxCpuFraction) return;
    before = after;
  }
  throw new Error(`process ${pid} still busy after ${timeoutMs / 1000} s`);
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface JsonResponse {
  status: number;
  body: any;
}

/** One request to 127.0.0.1:<port>; the body, if any, is sent as JSON and the answer parsed as JSON. */
export function requestJson(options: {
  port: number;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  key?: string;
  body?: unknown;
  agent?: http.Agent;
  timeoutMs?: number;
  /** Called once the whole request has been handed to the socket. */
  onSent?: () => void;
}): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = http.request(
      {
        host: HOST,
        port: options.port,
        method: options.method,
        path: options.path,
        agent: options.agent,
        headers: {
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
        },
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${options.method} ${options.path} timed out`)));
    req.on('error', reject);
    if (options.onSent) req.on('finish', options.onSent);
    req.end(payload);
  });
}

/** Like requestJson, but anything other than the expected status is an error. */
export async function expectJson(expected: number, options: Parameters<typeof requestJson>[0]): Promise<any> {
  const response = await requestJson(options);
  if (response.status !== expected) {
    throw new Error(`${options.method} ${options.path}: expected ${expected}, got ${response.status}: ${JSON.stringify(response.body)}`);
  }
  return response.body;
}

export function putPolicy(port: number, key: string, policyKey: string, document: object): Promise<unknown> {
  return expectJson(200, { port, method: 'PUT', path: `/v1/policies/${policyKey}`, key, body: document });
}

// ---------------------------------------------------------------------------------------------
// Small utilities

/** `fn` over every item with at most `limit` in flight; results in item order. */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile, except that the median of an even count averages the middle two. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  if (p === 50 && sorted.length % 2 === 0) return (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** A plain-text table; numbers are right-aligned. */
export function formatTable(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]!.length)));
  const line = (row: string[], isHeader: boolean) =>
    row
      .map((cell, column) =>
        isHeader || typeof rows[0]?.[column] !== 'number' ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [line(cells[0]!, true), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map((row) => line(row, false))].join('\n');
}
