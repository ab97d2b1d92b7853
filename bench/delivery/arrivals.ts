// What reached the receiver (bench/delivery/receiver.ts), checked: every decided approval delivered
// to every endpoint exactly once, and how often BullMQ had to hand each delivery job out.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { webhookDeliveryJob } from '../../src/consumers/webhooks/webhook-delivery.js';
import { round } from '../lib/figures.js';
import { REDIS_URL } from '../lib/fixtures.js';
import { expectJson } from '../lib/http.js';
import { log } from '../lib/run.js';
import { cpuSnapshot } from './cpu-window.js';
import type { DeliveryCheck, JobStarts } from './results.js';
import type { DeliveryRig } from './rig.js';
import { DUPLICATE_GRACE_MS, EVENT, RECEIVER_PORT, REDIS_PREFIX, STALL_S } from './settings.js';

export type DeliveryRecord = [arrivedAtMs: number, path: string, eventId: string, approvalId: string, type: string];

const receiverCount = async () =>
  (await expectJson(200, { port: RECEIVER_PORT, method: 'GET', path: '/_bench/count' })) as {
    received: number;
    unique: number;
    unparsable: number;
  };

export const receiverReset = () => expectJson(200, { port: RECEIVER_PORT, method: 'POST', path: '/_bench/reset' });

/** Until `expected` distinct deliveries arrived (or none for STALL_S); then the records, after a grace for duplicates. */
export async function waitForDeliveries(rig: DeliveryRig, expected: number, label: string) {
  let last = -1;
  let lastProgressAt = Date.now();
  for (;;) {
    const dead = rig.watched().find((p) => p.exited());
    if (dead) throw new Error(`the ${dead.label} process exited during ${label}:\n${dead.stderrTail()}`);
    const { unique } = await receiverCount();
    if (unique >= expected) break;
    if (unique !== last) {
      last = unique;
      lastProgressAt = Date.now();
    } else if (Date.now() - lastProgressAt > STALL_S * 1000) {
      log(`!!! ${label}: ${unique} of ${expected} deliveries, and none for ${STALL_S} s; going on without the rest`);
      break;
    }
    await sleep(50);
  }
  const cpuAtEnd = cpuSnapshot(rig.watched());
  await sleep(DUPLICATE_GRACE_MS);
  const { unparsable } = await receiverCount();
  const records = (await expectJson(200, {
    port: RECEIVER_PORT,
    method: 'GET',
    path: '/_bench/records',
    timeoutMs: 60_000,
  })) as DeliveryRecord[];
  return { records, unparsable, cpuAtEnd };
}

/**
 * Exactly one delivery per (approval, endpoint)? Returns the check and the first arrival per pair;
 * duplicates are described into `duplicateReports`.
 */
export function checkDeliveries(
  records: DeliveryRecord[],
  unparsable: number,
  approvalIds: string[],
  paths: string[],
  label: string,
  duplicateReports: string[],
) {
  const approvals = new Set(approvalIds);
  const endpointPaths = new Set(paths);
  const perEvent = new Map<string, number[]>();
  const eventsPerPair = new Map<string, Set<string>>();
  const firstArrival = new Map<string, number>();
  let unexpected = 0;
  for (const [arrivedAt, hookPath, eventId, approvalId, type] of records) {
    if (!approvals.has(approvalId) || !endpointPaths.has(hookPath) || type !== EVENT) {
      unexpected++;
      continue;
    }
    const eventKey = `${hookPath}|${eventId}`;
    const arrivals = perEvent.get(eventKey) ?? [];
    arrivals.push(arrivedAt);
    perEvent.set(eventKey, arrivals);
    const pair = `${hookPath}|${approvalId}`;
    const events = eventsPerPair.get(pair) ?? new Set<string>();
    events.add(eventId);
    eventsPerPair.set(pair, events);
    if (!firstArrival.has(pair) || firstArrival.get(pair)! > arrivedAt) firstArrival.set(pair, arrivedAt);
  }
  const duplicated = [...perEvent].filter(([, arrivals]) => arrivals.length > 1);
  const check: DeliveryCheck = {
    expected: approvalIds.length * paths.length,
    delivered: firstArrival.size,
    missing: approvalIds.length * paths.length - firstArrival.size,
    duplicates: duplicated.reduce((sum, [, arrivals]) => sum + arrivals.length - 1, 0),
    doubleEvents: [...eventsPerPair.values()].filter((events) => events.size > 1).length,
    unexpected,
    unparsable,
  };
  for (const [key, arrivals] of duplicated.slice(0, 10)) {
    const [hookPath, eventId] = key.split('|');
    const times = arrivals.map((t) => new Date(t).toISOString().slice(11, 23)).join(', ');
    duplicateReports.push(`${label}: event ${eventId} at ${hookPath} arrived ${arrivals.length} times (at ${times})`);
  }
  if (check.missing || check.duplicates || check.doubleEvents || check.unexpected || check.unparsable) {
    log(`!!! ${label}: ${JSON.stringify(check)}`);
  }
  return { check, firstArrival };
}

/** `ats` (attempts started) of the newest completed delivery jobs, read from Redis. */
export async function deliveryJobStarts(newest: number): Promise<JobStarts> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const base = `${REDIS_PREFIX}:${webhookDeliveryJob.queue}`;
    const ids = await redis.zrevrange(`${base}:completed`, 0, Math.min(newest, 1000) - 1);
    const pipeline = redis.pipeline();
    for (const id of ids) pipeline.hget(`${base}:${id}`, 'ats');
    const starts = ((await pipeline.exec()) ?? []).map(([, value]) => Number(value ?? 0)).filter((n) => n > 0);
    return {
      sampled: starts.length,
      putBackPct: round((100 * starts.filter((n) => n > 1).length) / starts.length, 1),
      meanStarts: round(starts.reduce((a, b) => a + b, 0) / starts.length, 2),
      maxStarts: Math.max(...starts),
    };
  } finally {
    redis.disconnect();
  }
}

export const formatStarts = (j: JobStarts) =>
  `${j.putBackPct}% of the newest ${j.sampled} jobs (starts per job: mean ${j.meanStarts}, max ${j.maxStarts})`;
