// CPU use over a step of bench/delivery.ts: readings of every process involved at its start and
// end, turned into percents of a core and CPU ms per unit of work.
import os from 'node:os';
import { round } from '../lib/figures.js';
import { cpuSpentMs, epochMs, machineCpuMs, processCpuMs, processGroupCpuMs } from '../lib/proc-stats.js';
import type { NodeProcess } from '../lib/processes.js';
import type { CpuUse } from './results.js';
import { DATABASE } from './settings.js';

export interface CpuSnapshot {
  at: number;
  processes: Record<string, number>;
  /** Backends of the bench database. */
  postgres: Map<number, number>;
  /** Every postgres process: also other clients of the server, and its background writers. */
  postgresAll: Map<number, number>;
  redis: Map<number, number>;
  machine: { busy: number; total: number };
}

export function cpuSnapshot(processes: NodeProcess[]): CpuSnapshot {
  return {
    at: epochMs(),
    // This process too: it is the load generator (and, for the ceiling, the producer).
    processes: { bench: processCpuMs(process.pid), ...Object.fromEntries(processes.map((p) => [p.label, processCpuMs(p.pid)])) },
    postgres: processGroupCpuMs('postgres', ` ${DATABASE} `),
    postgresAll: processGroupCpuMs('postgres'),
    redis: processGroupCpuMs('redis-server'),
    machine: machineCpuMs(),
  };
}

export function cpuUse(from: CpuSnapshot, to: CpuSnapshot): CpuUse {
  const wall = to.at - from.at;
  const pct = (ms: number) => round((100 * ms) / wall, 0);
  const use: CpuUse = {};
  for (const [label, ms] of Object.entries(to.processes)) use[label] = pct(ms - (from.processes[label] ?? 0));
  use.postgres = pct(cpuSpentMs(from.postgres, to.postgres));
  use['postgres (all)'] = pct(cpuSpentMs(from.postgresAll, to.postgresAll));
  use.redis = pct(cpuSpentMs(from.redis, to.redis));
  use.machine = round((100 * (to.machine.busy - from.machine.busy)) / (to.machine.total - from.machine.total), 0);
  // Everything else running on the machine meanwhile (other people's work: this machine is shared), in % of one core.
  const listed = Object.keys(to.processes).reduce((sum, label) => sum + use[label]!, 0) + use['postgres (all)']! + use.redis;
  use['everything else'] = Math.max(0, round(use.machine * os.cpus().length - listed, 0));
  return use;
}

/** CPU ms per unit of work, from percents of a core over a window. */
export function cpuMsPer(cpu: CpuUse, windowMs: number, units: number, names: string[]): Record<string, number> {
  return Object.fromEntries(names.map((name) => [name, round(((cpu[name] ?? 0) / 100) * (windowMs / units), 3)]));
}

export const formatPer = (per: Record<string, number>) =>
  Object.entries(per)
    .map(([name, ms]) => `${name} ${ms}`)
    .join(', ');

export const formatCpu = (cpu: CpuUse) =>
  Object.entries(cpu)
    .map(([name, pct]) => `${name} ${pct}%`)
    .join(', ');
