// Step 5 of bench/delivery.ts: where the worker's time goes. The 10-endpoint batch again with the
// worker under `--cpu-prof`, after everything measured, so that it distorts nothing.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { summarizeCpuProfile, type ProfileSummary } from '../lib/cpu-profile.js';
import { log } from '../lib/run.js';
import type { DeliveryRig } from './rig.js';
import { PROFILE_DECISIONS, PROFILE_ENDPOINTS } from './settings.js';
import { measureThroughput } from './throughput.js';

export type WorkerProfile = ProfileSummary & { deliveriesPerS: number; workerCpu: number; file: string };

/** The profile's summary; undefined (and a note) when the worker wrote none. Leaves the worker stopped. */
export async function profileWorker(rig: DeliveryRig, ceilingPerS: number): Promise<WorkerProfile | undefined> {
  log(`--- profile: the ${PROFILE_ENDPOINTS}-endpoint batch again, worker under --cpu-prof`);
  await rig.settle();
  const profileDir = path.join(rig.tmp, 'profile');
  await rig.restartWorker('worker-profiled', ['--cpu-prof', '--cpu-prof-dir', profileDir]);
  const profiled = await measureThroughput(rig, PROFILE_ENDPOINTS, PROFILE_DECISIONS, ceilingPerS, 'profiled');
  await rig.worker.stop();
  const files = existsSync(profileDir) ? readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')) : [];
  if (files.length === 0) {
    rig.notes.push('the profiled worker wrote no .cpuprofile');
    return undefined;
  }
  const file = path.join(profileDir, files[0]!);
  return { ...summarizeCpuProfile(file), deliveriesPerS: profiled.deliveriesPerS, workerCpu: profiled.cpu.worker ?? NaN, file };
}
