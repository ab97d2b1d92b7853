// Step 2 of bench/delivery.ts: decision-to-delivery latency to one endpoint. Per approval, its
// delivery's arrival at the receiver minus the arrival of its decision's response, and the stages
// in between from the rows the web and worker wrote.
import pg from 'pg';
import { percentile, round, stats, type Stats } from '../lib/figures.js';
import type { Pacing } from '../lib/concurrency.js';
import { log } from '../lib/run.js';
import { checkDeliveries, deliveryJobStarts, receiverReset, waitForDeliveries } from './arrivals.js';
import { cpuSnapshot, cpuUse, formatCpu } from './cpu-window.js';
import type { LatencyResult } from './results.js';
import type { DeliveryRig } from './rig.js';
import { EVENT, LATENCY_PATH } from './settings.js';
import { decideAll, type DecisionBatch } from './traffic.js';

export async function measureLatency(rig: DeliveryRig, load: string, ids: string[], pacing: Pacing): Promise<LatencyResult> {
  await rig.settle();
  await receiverReset();
  log(
    `latency, ${load}: deciding ${ids.length} (${pacing.ratePerS ? `paced at ${pacing.ratePerS}/s, ` : ''}${pacing.concurrency} concurrent)`,
  );
  const cpuFrom = cpuSnapshot(rig.watched());
  const batch = await decideAll(rig.latencyOrg, ids, pacing);
  const { records, unparsable, cpuAtEnd } = await waitForDeliveries(rig, batch.ok.length, `latency ${load}`);
  const cpu = cpuUse(cpuFrom, cpuAtEnd);
  const { check, firstArrival } = checkDeliveries(
    records,
    unparsable,
    batch.ok.map((d) => d.approvalId),
    [LATENCY_PATH],
    `latency ${load}`,
    rig.duplicateReports,
  );
  const sinceResponse: number[] = [];
  const sinceSent: number[] = [];
  for (const d of batch.ok) {
    const arrivedAt = firstArrival.get(`${LATENCY_PATH}|${d.approvalId}`);
    if (arrivedAt === undefined) continue;
    sinceResponse.push(arrivedAt - d.doneAt);
    sinceSent.push(arrivedAt - d.sentAt);
  }
  const inSendOrder = [...batch.ok]
    .sort((a, b) => a.sentAt - b.sentAt)
    .flatMap((d) => {
      const arrivedAt = firstArrival.get(`${LATENCY_PATH}|${d.approvalId}`);
      return arrivedAt === undefined ? [] : [arrivedAt - d.doneAt];
    });
  const byTenthMs = Array.from({ length: 10 }, (_, k) => {
    const part = inSendOrder.slice(Math.floor((k * inSendOrder.length) / 10), Math.floor(((k + 1) * inSendOrder.length) / 10));
    return { p50: round(percentile(part, 50), 0), p99: round(percentile(part, 99), 0) };
  });
  const stagesMs = await latencyStages(rig, batch.ok, firstArrival);
  const jobStarts = await deliveryJobStarts(check.delivered);
  const result: LatencyResult = {
    load,
    decisions: batch.ok.length,
    failedDecisions: batch.failed.length,
    decisionsPerS: round(ids.length / ((batch.endedAt - batch.startedAt) / 1000), 0),
    decisionResponseMs: stats(batch.ok.map((d) => d.doneAt - d.sentAt)),
    check,
    sinceResponseMs: stats(sinceResponse),
    sinceSentMs: stats(sinceSent),
    beforeResponse: sinceResponse.filter((ms) => ms < 0).length,
    byTenthMs,
    stagesMs,
    jobStarts,
    cpu,
  };
  log(
    `latency, ${load}: delivery after decision response p50 ${result.sinceResponseMs.p50} ms, p99 ${result.sinceResponseMs.p99} ms, max ${result.sinceResponseMs.max} ms; ${formatCpu(cpu)}`,
  );
  return result;
}

/**
 * The stages of each delivery, from the rows: the outbox row (created at the start of the
 * decision's transaction), the delivery row (created when the relay fanned the event out) and
 * the first attempt (stamped by the worker just before it signs and sends).
 */
async function latencyStages(
  rig: DeliveryRig,
  decided: DecisionBatch['ok'],
  firstArrival: Map<string, number>,
): Promise<Record<string, Stats>> {
  const client = new pg.Client({ connectionString: rig.dbUrl });
  await client.connect();
  try {
    const rows = (
      await client.query<{ approval_id: string; committing_at: Date; fanned_out_at: Date; attempted_at: Date | null }>(
        `SELECT o.body->'data'->>'approvalId' AS approval_id, o.created_at AS committing_at,
                d.created_at AS fanned_out_at, min(a.attempted_at) AS attempted_at
         FROM outbox_messages o
         JOIN webhook_deliveries d ON d.event_id = o.event_id
         LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
         WHERE o.org_id = $1 AND o.event_type = $2 AND o.body->'data'->>'approvalId' = ANY ($3::text[])
         GROUP BY 1, 2, 3`,
        [rig.latencyOrg.orgId, EVENT, decided.map((d) => d.approvalId)],
      )
    ).rows;
    const byApproval = new Map(rows.map((row) => [row.approval_id, row]));
    const stages: Record<string, number[]> = {
      'decision transaction start -> decision response': [],
      'decision response -> relay fan-out (delivery row)': [],
      'fan-out -> attempt starts (queue, load, slot)': [],
      'attempt starts -> arrival (sign, POST)': [],
    };
    const [toResponse, toFanOut, toAttempt, toArrival] = Object.values(stages) as [number[], number[], number[], number[]];
    for (const d of decided) {
      const row = byApproval.get(d.approvalId);
      const arrivedAt = firstArrival.get(`${LATENCY_PATH}|${d.approvalId}`);
      if (!row || !row.attempted_at || arrivedAt === undefined) continue;
      toResponse.push(d.doneAt - row.committing_at.getTime());
      toFanOut.push(row.fanned_out_at.getTime() - d.doneAt);
      toAttempt.push(row.attempted_at.getTime() - row.fanned_out_at.getTime());
      toArrival.push(arrivedAt - row.attempted_at.getTime());
    }
    return Object.fromEntries(Object.entries(stages).map(([name, values]) => [name, stats(values)]));
  } finally {
    await client.end();
  }
}
