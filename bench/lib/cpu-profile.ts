// Where a process's CPU time went, from a V8 CPU profile (`node --cpu-prof`): self time by origin
// (package, node core, the app), by calling package, and by function.
import { readFileSync } from 'node:fs';
import { PROJECT_ROOT } from './processes.js';

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
