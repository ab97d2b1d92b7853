// Helpers of bench/delivery.ts that bench/support.ts does not have: child processes that are not
// HTTP servers (the worker, a bare BullMQ worker), CPU accounting from /proc, the build, and a
// summary of a V8 CPU profile. Everything here talks to 127.0.0.1 only.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { log, PROJECT_ROOT } from './support.js';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between processes on this machine. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

// ---------------------------------------------------------------------------------------------
// Child processes

export interface NodeProcess {
  label: string;
  /** The pid of the node process itself (not a wrapper), for /proc sampling. */
  pid: number;
  exited(): boolean;
  stderrTail(): string;
  stop(): Promise<void>;
}

export interface NodeProcessOptions {
  label: string;
  /** Arguments after `node`, e.g. ['dist/workers/index.js'] or ['--import', 'tsx', 'src/server.ts']. */
  args: string[];
  env: Record<string, string>;
  /** stdout is appended to this file; without it (and without onStdoutLine) it goes to /dev/null. */
  stdoutFile?: string;
  /** Every line of stdout, for children that report on it. */
  onStdoutLine?: (line: string) => void;
  /** A port that must be free before the start (a leftover of an earlier run would answer instead). */
  port?: number;
  /** Polled every 100 ms until it holds. */
  isReady: () => Promise<boolean> | boolean;
  readyTimeoutMs?: number;
}

/**
 * Starts `node <args>` so that the child *is* the node process. It goes through bash only to raise
 * its open-files limit to the hard limit (`exec` keeps the pid). The tail of stderr is kept to
 * explain a failed start or an unexpected exit.
 */
export async function startNodeProcess(options: NodeProcessOptions): Promise<NodeProcess> {
  if (options.port !== undefined) await assertPortFree(options.port);
  const stdoutFd = options.stdoutFile ? openSync(options.stdoutFile, 'a') : undefined;
  const stdout = stdoutFd ?? (options.onStdoutLine ? 'pipe' : 'ignore');
  let child: ChildProcess;
  try {
    child = spawn('bash', ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, ...options.args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', stdout, 'pipe'],
    });
  } finally {
    if (stdoutFd !== undefined) closeSync(stdoutFd);
  }
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  if (options.onStdoutLine && child.stdout) {
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop()!;
      for (const line of lines) options.onStdoutLine!(line);
    });
  }
  const exited = once(child, 'exit');
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  let stopping = false;
  const stop = async () => {
    stopping = true;
    await stopChild(child);
  };
  try {
    const giveUpAt = Date.now() + (options.readyTimeoutMs ?? 60_000);
    for (;;) {
      if (hasExited) throw new Error(`exited with code ${child.exitCode} (signal ${child.signalCode})`);
      if (await Promise.resolve(options.isReady()).catch(() => false)) break;
      if (Date.now() > giveUpAt) throw new Error(`not ready after ${options.readyTimeoutMs ?? 60_000} ms`);
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw new Error(`${options.label} (${options.args.join(' ')}) did not start: ${String(error)}\n--- its stderr ---\n${stderr}`);
  }
  void exited.then(() => {
    if (!stopping)
      log(`!!! ${options.label} (pid ${child.pid}) exited unexpectedly: code ${child.exitCode}, signal ${child.signalCode}\n${stderr}`);
  });
  return { label: options.label, pid: child.pid!, exited: () => hasExited, stderrTail: () => stderr, stop };
}

/** SIGTERM, then SIGKILL after 20 s; resolves once the child has exited. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

async function assertPortFree(port: number): Promise<void> {
  const probe = net.createServer();
  try {
    probe.listen(port, '127.0.0.1');
    await once(probe, 'listening');
  } catch (error) {
    throw new Error(`port ${port} is already in use (${String(error)}); is another benchmark running?`);
  } finally {
    probe.close();
  }
}

/** Runs a command in the project to its end; resolves with its exit code and the tail of its output. */
export async function runCommand(command: string, args: string[], timeoutMs: number): Promise<{ code: number; output: string }> {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-6000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code: code ?? (signal ? 128 : 1), output };
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc (USER_HZ is 100 on Linux)

function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined; // the process is gone
  }
}

/** User + system CPU time of a process in ms; 0 once it is gone. */
export function processCpuMs(pid: number): number {
  const fields = statFields(pid);
  return fields ? ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 : 0;
}

/**
 * User + system CPU time, in ms, of every process whose command is `command` (e.g. `postgres`) and,
 * with `cmdline`, whose command line contains it (a postgres backend's shows its database), by pid.
 * Compare two readings with `cpuSpentMs`.
 */
export function processGroupCpuMs(command: string, cmdline?: string): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== command) continue;
      if (cmdline && !readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(cmdline)) continue;
    } catch {
      continue; // gone meanwhile
    }
    const fields = statFields(entry);
    if (fields) byPid.set(Number(entry), ((Number(fields[11]) + Number(fields[12])) * 1000) / 100);
  }
  return byPid;
}

/**
 * CPU ms spent between two readings by the processes alive at the second one (a process that
 * started in between counts from its start). A process that ended in between is not counted, so
 * this is a lower bound, but never negative.
 */
export function cpuSpentMs(before: Map<number, number>, after: Map<number, number>): number {
  let spent = 0;
  for (const [pid, ms] of after) spent += Math.max(0, ms - (before.get(pid) ?? 0));
  return spent;
}

/** The whole machine's CPU time, busy and total, in ms summed over all cores (first line of /proc/stat). */
export function machineCpuMs(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as number[];
  const total = user! + nice! + system! + idle! + iowait! + irq! + softirq! + steal!;
  return { busy: ((total - idle! - iowait!) * 1000) / 100, total: (total * 1000) / 100 };
}

// ---------------------------------------------------------------------------------------------
// V8 CPU profiles (`node --cpu-prof`)

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  /** Self time by where the code comes from (package, node core, the app, GC...), busiest first. */
  byOrigin: { origin: string; ms: number }[];
  /**
   * Self time charged to the nearest caller in a package or the app: what V8 builtins, native
   * calls (socket writes...) and node core did on behalf of, say, pg or bullmq counts as theirs.
   */
  byCaller: { origin: string; ms: number }[];
  /** Self time by function, busiest first. */
  byFunction: { fn: string; origin: string; ms: number }[];
}

const GENERIC_ORIGINS = new Set(['(V8 builtins / native)', 'node core', '(program)', '(root)']);

function originOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(V8 builtins / native)';
  if (url.startsWith('node:')) return 'node core';
  const packages = [...url.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
  if (packages.length > 0) return packages[packages.length - 1]![1]!;
  if (url.includes('/src/generated/')) return 'prisma generated client';
  if (url.includes(PROJECT_ROOT) || url.startsWith('file://')) return 'app (src/, workers/)';
  return url;
}

/** Self time per origin and per function of a `.cpuprofile` file. */
export function summarizeCpuProfile(file: string): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const callerOrigin = new Map<number, string>();
  const callerOf = (id: number): string => {
    const known = callerOrigin.get(id);
    if (known !== undefined) return known;
    const { url, functionName } = byNode.get(id)!.callFrame;
    const own = originOf(url, functionName);
    const parent = parentOf.get(id);
    const origin = GENERIC_ORIGINS.has(own) && parent !== undefined ? callerOf(parent) : own;
    callerOrigin.set(id, origin);
    return origin;
  };
  const origins = new Map<string, number>();
  const callers = new Map<string, number>();
  const functions = new Map<string, { fn: string; origin: string; ms: number }>();
  let totalMs = 0;
  let idleMs = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byNode.get(id)!.callFrame;
    const ms = us / 1000;
    totalMs += ms;
    if (functionName === '(idle)') idleMs += ms;
    const origin = originOf(url, functionName);
    origins.set(origin, (origins.get(origin) ?? 0) + ms);
    const caller = callerOf(id);
    callers.set(caller, (callers.get(caller) ?? 0) + ms);
    const shortUrl = url.replace(`file://${PROJECT_ROOT}`, '').replace(/^.*node_modules\//, '');
    const fn = `${functionName || '(anonymous)'}${url ? ` ${shortUrl}:${lineNumber + 1}` : ''}`;
    const entry = functions.get(fn) ?? { fn, origin, ms: 0 };
    entry.ms += ms;
    functions.set(fn, entry);
  }
  return {
    totalMs,
    idleMs,
    byOrigin: [...origins].map(([origin, ms]) => ({ origin, ms })).sort((a, b) => b.ms - a.ms),
    byCaller: [...callers].map(([origin, ms]) => ({ origin, ms })).sort((a, b) => b.ms - a.ms),
    byFunction: [...functions.values()].sort((a, b) => b.ms - a.ms),
  };
}
