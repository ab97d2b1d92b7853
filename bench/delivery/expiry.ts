// Step 4 of bench/delivery.ts: expiry lateness. Approvals created so that their deadlines fall
// within a few seconds, one long-poll on each; decided_at - expires_at from the database once the
// long-polls have seen them settle.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { runPaced } from '../lib/concurrency.js';
import { round, stats } from '../lib/figures.js';
import { expectJson, requestJson } from '../lib/http.js';
import { epochMs } from '../lib/proc-stats.js';
import { log } from '../lib/run.js';
import { cpuSnapshot, cpuUse } from './cpu-window.js';
import type { ExpiryResult } from './results.js';
import type { DeliveryRig } from './rig.js';
import { API_PORT, APPROVAL_BODY, EXPIRY_APPROVALS, EXPIRY_POLICY, EXPIRY_SPREAD_S, EXPIRY_TIMEOUT_S } from './settings.js';

/** `deadlines`, when given, receives each approval's deadline (epoch ms) by its id. */
export async function measureExpiry(rig: DeliveryRig, deadlines?: Map<string, number>): Promise<ExpiryResult> {
  await rig.settle();
  const org = rig.expiryOrg;
  const createAgent = new http.Agent({ keepAlive: true, maxSockets: 20 });
  const waitAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const created: { id: string; expiresAt: number }[] = [];
  const answers: { answeredAt?: number; error?: string }[] = [];
  const waiters: Promise<void>[] = [];
  const waitFor = async (i: number) => {
    const { id } = created[i]!;
    for (let poll = 1; poll <= 3; poll++) {
      try {
        const response = await requestJson({
          port: API_PORT,
          method: 'GET',
          path: `/v1/approvals/${id}?wait=30`,
          key: org.key,
          agent: waitAgent,
          timeoutMs: 45_000,
        });
        if (response.status !== 200) {
          answers[i] = { error: `HTTP ${response.status}` };
          return;
        }
        if (response.body.status !== 'pending') {
          answers[i] = { answeredAt: epochMs() };
          return;
        }
      } catch (error) {
        answers[i] = { error: String(error) };
        return;
      }
    }
    answers[i] = { error: 'still pending after 3 waits' };
  };
  const rate = EXPIRY_APPROVALS / EXPIRY_SPREAD_S;
  log(`expiry: creating ${EXPIRY_APPROVALS} approvals over ${EXPIRY_SPREAD_S} s (timeoutSeconds ${EXPIRY_TIMEOUT_S}), one long-poll each`);
  const cpuFrom = cpuSnapshot(rig.watched());
  await runPaced(EXPIRY_APPROVALS, { concurrency: 20, ratePerS: rate }, async (i) => {
    const body = await expectJson(201, {
      port: API_PORT,
      method: 'POST',
      path: '/v1/approvals',
      key: org.key,
      body: { ...APPROVAL_BODY, policyKey: EXPIRY_POLICY },
      agent: createAgent,
    });
    created[i] = { id: body.id as string, expiresAt: Date.parse(body.expiresAt as string) };
    deadlines?.set(created[i].id, created[i].expiresAt);
    waiters.push(waitFor(i));
  });
  createAgent.destroy();
  const expiries = created.map((c) => c.expiresAt);
  const windowS = (Math.max(...expiries) - Math.min(...expiries)) / 1000;
  log(
    `expiry: created; deadlines fall within ${round(windowS, 2)} s, the last in ${round((Math.max(...expiries) - Date.now()) / 1000, 1)} s`,
  );
  const timedOut = Symbol('timed out');
  const outcome = await Promise.race([Promise.all(waiters), sleep((EXPIRY_TIMEOUT_S + 90) * 1000, timedOut)]);
  if (outcome === timedOut) log('!!! expiry: long-polls still open 90 s after the deadlines; reading the database anyway');
  const cpu = cpuUse(cpuFrom, cpuSnapshot(rig.watched()));
  waitAgent.destroy();

  const client = new pg.Client({ connectionString: rig.dbUrl });
  await client.connect();
  try {
    const rows = (
      await client.query<{ id: string; status: string; decided_at: Date | null }>(
        'SELECT id, status, decided_at FROM approvals WHERE id = ANY($1::uuid[])',
        [created.map((c) => c.id)],
      )
    ).rows;
    const actors = (
      await client.query<{ id: string; actor: string }>(
        `SELECT data::jsonb->>'approvalId' AS id, actor FROM audit_events WHERE org_id = $1 AND type = 'approval.expired'`,
        [org.orgId],
      )
    ).rows;
    const settledBy: Record<string, number> = {};
    for (const { actor } of actors) {
      const by = (JSON.parse(actor) as { id?: string }).id ?? actor;
      settledBy[by] = (settledBy[by] ?? 0) + 1;
    }
    // The settlement clears expires_at, so the deadline is the one the creation answered with.
    const deadlineOf = new Map(created.map((c) => [c.id, c.expiresAt]));
    const expired = rows.filter((r) => r.status === 'expired' && r.decided_at);
    const lateness = expired.map((r) => r.decided_at!.getTime() - deadlineOf.get(r.id)!);
    const longPollLateness = created.flatMap((c, i) => {
      const answeredAt = answers[i]?.answeredAt;
      return answeredAt === undefined ? [] : [answeredAt - c.expiresAt];
    });
    const result: ExpiryResult = {
      approvals: EXPIRY_APPROVALS,
      expiresWindowS: round(windowS, 2),
      expired: expired.length,
      notExpired: EXPIRY_APPROVALS - expired.length,
      latenessMs: stats(lateness),
      longPollLatenessMs: stats(longPollLateness),
      earlyCount: lateness.filter((ms) => ms < 0).length,
      waiterErrors: answers.filter((a) => a?.error).length,
      settledBy,
      cpu,
    };
    log(
      `expiry: ${expired.length} expired; lateness p50 ${result.latenessMs.p50} ms, p99 ${result.latenessMs.p99} ms, max ${result.latenessMs.max} ms; settled by ${JSON.stringify(settledBy)}`,
    );
    return result;
  } finally {
    await client.end();
  }
}
