// The load bench/delivery.ts puts on the API: pending approvals created, then decided, paced or
// as fast as allowed, each decision timed from its send to its response.
import http from 'node:http';
import { mapConcurrent, runPaced, type Pacing } from '../lib/concurrency.js';
import { round } from '../lib/figures.js';
import type { BenchOrg } from '../lib/fixtures.js';
import { expectJson, requestJson } from '../lib/http.js';
import { epochMs } from '../lib/proc-stats.js';
import { log } from '../lib/run.js';
import { API_PORT, APPROVAL_BODY, CREATE_CONCURRENCY, REVIEW_POLICY } from './settings.js';

export async function createPending(org: BenchOrg, count: number, policyKey = REVIEW_POLICY): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CREATE_CONCURRENCY });
  const started = epochMs();
  try {
    const ids = await mapConcurrent(
      Array.from({ length: count }, (_, i) => i),
      CREATE_CONCURRENCY,
      async () => {
        const created = await expectJson(201, {
          port: API_PORT,
          method: 'POST',
          path: '/v1/approvals',
          key: org.key,
          body: { ...APPROVAL_BODY, policyKey },
          agent,
        });
        if (created.status !== 'pending') throw new Error(`approval ${created.id} was created ${created.status}, not pending`);
        return created.id as string;
      },
    );
    const seconds = (epochMs() - started) / 1000;
    log(`created ${count} pending approvals in ${round(seconds)} s (${round(count / seconds, 0)}/s)`);
    return ids;
  } finally {
    agent.destroy();
  }
}

export interface DecisionBatch {
  ok: { approvalId: string; sentAt: number; doneAt: number }[];
  failed: string[];
  startedAt: number;
  endedAt: number;
}

/** Approves every approval of `ids`; a decision that is not answered 200 `approved` is counted as failed. */
export async function decideAll(org: BenchOrg, ids: string[], pacing: Pacing): Promise<DecisionBatch> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: pacing.concurrency });
  const ok: DecisionBatch['ok'] = [];
  const failed: string[] = [];
  const startedAt = epochMs();
  await runPaced(ids.length, pacing, async (i) => {
    const approvalId = ids[i]!;
    const sentAt = epochMs();
    try {
      const response = await requestJson({
        port: API_PORT,
        method: 'POST',
        path: `/v1/approvals/${approvalId}/decision`,
        key: org.reviewerKey,
        body: { verdict: 'approved' },
        agent,
      });
      const doneAt = epochMs();
      if (response.status === 200 && response.body?.status === 'approved') ok.push({ approvalId, sentAt, doneAt });
      else failed.push(`HTTP ${response.status}: ${JSON.stringify(response.body).slice(0, 200)}`);
    } catch (error) {
      failed.push(String(error));
    }
  });
  agent.destroy();
  const endedAt = epochMs();
  const seconds = (endedAt - startedAt) / 1000;
  log(
    `decided ${ok.length} in ${round(seconds)} s (${round(ids.length / seconds, 0)}/s)${failed.length ? `, ${failed.length} FAILED` : ''}`,
  );
  for (const problem of failed.slice(0, 3)) log(`!!! decision failed: ${problem}`);
  return { ok, failed, startedAt, endedAt };
}
