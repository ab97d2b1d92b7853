// Step 3 of bench/delivery.ts: delivery throughput to 1, 10 or 100 endpoints of one org. A batch
// of decisions as fast as possible; deliveries/s at the receiver from the first to the last
// arrival, against the bare BullMQ ceiling of step 1.
import { round } from '../lib/figures.js';
import { log } from '../lib/run.js';
import { checkDeliveries, deliveryJobStarts, receiverReset, waitForDeliveries } from './arrivals.js';
import { cpuMsPer, cpuSnapshot, cpuUse, formatCpu } from './cpu-window.js';
import type { ThroughputResult } from './results.js';
import type { DeliveryRig } from './rig.js';
import { HIGH_CONCURRENCY } from './settings.js';
import { createPending, decideAll } from './traffic.js';

export async function measureThroughput(
  rig: DeliveryRig,
  endpoints: number,
  decisions: number,
  ceilingPerS: number,
  label = `throughput ${endpoints}`,
): Promise<ThroughputResult> {
  const org = rig.throughputOrgs.get(endpoints)!;
  const paths = rig.throughputPaths.get(endpoints)!;
  const ids = await createPending(org, decisions);
  await rig.settle();
  await receiverReset();
  log(`${label}: deciding ${decisions} as fast as possible (${HIGH_CONCURRENCY} concurrent), ${decisions * endpoints} deliveries expected`);
  const cpuFrom = cpuSnapshot(rig.watched());
  const batch = await decideAll(org, ids, { concurrency: HIGH_CONCURRENCY });
  const { records, unparsable, cpuAtEnd } = await waitForDeliveries(rig, batch.ok.length * endpoints, label);
  const cpu = cpuUse(cpuFrom, cpuAtEnd);
  const { check, firstArrival } = checkDeliveries(
    records,
    unparsable,
    batch.ok.map((d) => d.approvalId),
    paths,
    label,
    rig.duplicateReports,
  );
  let first = Infinity;
  let last = -Infinity;
  for (const at of firstArrival.values()) {
    if (at < first) first = at;
    if (at > last) last = at;
  }
  const sortedArrivals = [...firstArrival.values()].sort((a, b) => a - b);
  let longestGapMs = 0;
  for (let i = 1; i < sortedArrivals.length; i++) longestGapMs = Math.max(longestGapMs, sortedArrivals[i]! - sortedArrivals[i - 1]!);
  const jobStarts = await deliveryJobStarts(check.delivered);
  const arrivalSeconds = (last - first) / 1000;
  const deliveriesPerS = check.delivered / arrivalSeconds;
  const result: ThroughputResult = {
    endpoints,
    decisions: batch.ok.length,
    failedDecisions: batch.failed.length,
    decideSeconds: round((batch.endedAt - batch.startedAt) / 1000, 2),
    check,
    arrivalSeconds: round(arrivalSeconds, 2),
    deliveriesPerS: round(deliveriesPerS, 0),
    endToEndPerS: round(check.delivered / ((last - batch.startedAt) / 1000), 0),
    ratioToCeiling: round(deliveriesPerS / ceilingPerS, 3),
    longestGapMs: round(longestGapMs, 0),
    jobStarts,
    cpu,
    cpuMsPerDelivery: cpuMsPer(cpu, cpuAtEnd.at - cpuFrom.at, check.delivered, ['worker', 'web', 'postgres', 'redis']),
  };
  log(
    `${label}: ${check.delivered} deliveries in ${result.arrivalSeconds} s = ${result.deliveriesPerS}/s (${round(result.ratioToCeiling * 100, 1)}% of the ceiling); ${formatCpu(cpu)}`,
  );
  return result;
}
