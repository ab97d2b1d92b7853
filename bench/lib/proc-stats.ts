// What processes use, read from /proc (Linux; USER_HZ is 100): CPU time, memory, limits, and a
// wall clock that child processes share.
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between processes on this machine. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Memory fields of /proc/<pid>/status, in MB. */
function readStatusMb(pid: number | 'self', ...fields: string[]): number[] {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return fields.map((field) => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
    if (!match) throw new Error(`no ${field} for process ${pid}`);
    return Number(match[1]) / 1024;
  });
}

/** Resident set size of a process, in MB. */
export function readRssMb(pid: number | 'self'): number {
  return readStatusMb(pid, 'VmRSS')[0]!;
}

/**
 * Of a process's resident set, in MB: `file`, the pages of files it maps (Node's binary, ICU data
 * inside it, libraries), which depend only on what code and data it has touched; `anon`, its heap
 * and other memory of its own, which moves with the garbage it holds at the moment.
 */
export function readRssSharesMb(pid: number): { anon: number; file: number } {
  const [anon, file, shmem] = readStatusMb(pid, 'RssAnon', 'RssFile', 'RssShmem') as [number, number, number];
  return { anon, file: file + shmem };
}

/** The peak resident set size of a process over its life (VmHWM), in MB. */
export function readPeakRssMb(pid: number): number {
  return readStatusMb(pid, 'VmHWM')[0]!;
}

/** The soft open-files limit of a process, from /proc/<pid>/limits. */
export function readOpenFilesLimit(pid: number | 'self'): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  if (!match) throw new Error(`no open-files limit for process ${pid}`);
  return match[1] === 'unlimited' ? Infinity : Number(match[1]);
}

/** User + system CPU time in ms from /proc/<pid>/stat; undefined once the process is gone. */
function readCpuMs(pid: number | string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime (fields 14 and 15 of stat)
  } catch {
    return undefined;
  }
}

/** User + system CPU time of a process in ms; 0 once it is gone. */
export function processCpuMs(pid: number): number {
  return readCpuMs(pid) ?? 0;
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
    const ms = readCpuMs(entry);
    if (ms !== undefined) byPid.set(Number(entry), ms);
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

/**
 * Resolves once the process has used under `maxCpuFraction` of one core during a whole `windowMs`,
 * i.e. it has worked through everything it was sent. Throws after `timeoutMs`.
 */
export async function waitUntilIdle(pid: number, { windowMs = 1000, maxCpuFraction = 0.05, timeoutMs = 60_000 } = {}): Promise<void> {
  const cpuMs = () => {
    const ms = readCpuMs(pid);
    if (ms === undefined) throw new Error(`process ${pid} is gone`);
    return ms;
  };
  const giveUpAt = Date.now() + timeoutMs;
  let before = cpuMs();
  while (Date.now() < giveUpAt) {
    await sleep(windowMs);
    const after = cpuMs();
    if (after - before <= windowMs * maxCpuFraction) return;
    before = after;
  }
  throw new Error(`process ${pid} still busy after ${timeoutMs / 1000} s`);
}
