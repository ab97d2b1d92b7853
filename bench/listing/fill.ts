// The approvals of bench/listing.ts, written straight into `approvals` by generate_series: a
// million rows take a minute or two instead of hours through the API. Rows look like the ones the
// API writes (a real payload hash, decider, decision time); values are spread unevenly, as in
// use: a few actions, agents and policies carry most of the traffic.
import type pg from 'pg';
import { round } from '../lib/figures.js';
import { log } from '../lib/run.js';

/** Each filter's values, commonest first (the spread below picks low indexes most often). */
export const ACTIONS = Array.from({ length: 24 }, (_, i) => `action.${String(i).padStart(2, '0')}`);
export const AGENTS = Array.from({ length: 300 }, (_, i) => `agent-${String(i).padStart(3, '0')}`);
export const POLICY_KEYS = Array.from({ length: 40 }, (_, i) => `policy-${String(i).padStart(2, '0')}`);
/** Share of rows without an agent. */
const NO_AGENT = 0.1;
/** How far back creation times go. */
export const HISTORY_DAYS = 365;
/** Approvals created this recently are still pending when nobody decided yet. */
const RECENT_DAYS = 3;
const BATCH = 100_000;

/**
 * One row per `i` of [from, to). Status depends on age: recent approvals are mostly pending;
 * older ones settled (approved 65%, rejected 17%, expired 13%, escalated 5%), but for 0.4% with a
 * long timeout. `onlyPending` makes every row a pending approval of the last RECENT_DAYS.
 */
const INSERT_APPROVALS = `
WITH drawn AS (
  SELECT i,
         now() - (CASE WHEN $4 THEN ${RECENT_DAYS} ELSE ${HISTORY_DAYS} END) * interval '1 day' * random() AS created_at,
         random() AS status_draw,
         random() AS decider_draw,
         (1 + floor(power(random(), 2) * 100000))::int AS amount,
         (ARRAY['EUR', 'USD', 'GBP'])[1 + floor(random() * 3)::int] AS currency,
         $5::text[] AS actions, $6::text[] AS agents, $7::text[] AS policies,
         floor(power(random(), 2.5) * ${ACTIONS.length})::int AS action_ix,
         CASE WHEN random() < ${NO_AGENT} THEN NULL ELSE floor(power(random(), 3) * ${AGENTS.length})::int END AS agent_ix,
         floor(power(random(), 2) * ${POLICY_KEYS.length})::int AS policy_ix,
         random() AS context_draw
  FROM generate_series($2::int, $3::int - 1) AS g(i)
),
shaped AS (
  SELECT d.*,
         CASE
           WHEN $4 THEN 'pending'
           WHEN d.created_at > now() - interval '${RECENT_DAYS} days' AND d.status_draw < 0.6 THEN 'pending'
           WHEN d.status_draw < 0.004 THEN 'pending'
           WHEN d.status_draw < 0.654 THEN 'approved'
           WHEN d.status_draw < 0.824 THEN 'rejected'
           WHEN d.status_draw < 0.954 THEN 'expired'
           ELSE 'escalated'
         END AS status,
         format('{"amount":%s,"currency":"%s","reference":"ref-%s"}', d.amount, d.currency, d.i) AS payload_text
  FROM drawn d
)
INSERT INTO approvals (id, org_id, status, action, payload, context, agent, policy_key, idempotency_key, created_at,
                       expires_at, on_timeout, verdict, feedback, decided_at, escalated_to, payload_hash, decided_by)
SELECT gen_random_uuid(), $1::uuid, s.status::"ApprovalStatus", s.actions[1 + s.action_ix], s.payload_text::jsonb,
       CASE WHEN s.context_draw < 0.5 THEN jsonb_build_object('ticket', 'T-' || s.i, 'requestedBy', 'user-' || (s.i % 97)) END,
       s.agents[1 + s.agent_ix], s.policies[1 + s.policy_ix],
       CASE WHEN s.context_draw < 0.3 THEN 'idem-' || s.i END,
       s.created_at,
       CASE WHEN s.status = 'pending' THEN now() + interval '1 day' * (1 + 30 * s.decider_draw) END,
       'expire'::"TimeoutAction",
       CASE WHEN s.status IN ('approved', 'rejected') THEN s.status END,
       CASE WHEN s.status = 'rejected' AND s.decider_draw < 0.2 THEN 'not this time: ' || s.i END,
       CASE WHEN s.status <> 'pending' THEN s.created_at + interval '1 minute' * (1 + 600 * s.decider_draw) END,
       CASE WHEN s.status = 'escalated' THEN gen_random_uuid() END,
       encode(sha256(convert_to(s.payload_text, 'UTF8')), 'hex'),
       CASE
         WHEN s.status NOT IN ('approved', 'rejected') THEN NULL
         WHEN s.status = 'approved' AND s.decider_draw < 0.3 THEN jsonb_build_object('type', 'policy', 'id', s.policies[1 + s.policy_ix])
         WHEN s.decider_draw < 0.6 THEN jsonb_build_object('type', 'api_key', 'id', '6f1c1c0e-0000-4000-8000-000000000001')
         ELSE jsonb_build_object('type', 'user', 'id', '6f1c1c0e-0000-4000-8000-0000000000' || lpad((s.i % 50)::text, 2, '0'),
                                 'email', 'reviewer' || (s.i % 50) || '@bench.test')
       END
FROM shaped s`;

/**
 * Inserts `count` approvals into the organization, in batches (with progress on stderr);
 * `onlyPending` for an inbox of recent pending approvals. Run ANALYZE afterwards.
 */
export async function fillApprovals(client: pg.Client, orgId: string, count: number, onlyPending = false): Promise<void> {
  const started = performance.now();
  for (let from = 0; from < count; from += BATCH) {
    const to = Math.min(count, from + BATCH);
    await client.query(INSERT_APPROVALS, [orgId, from, to, onlyPending, ACTIONS, AGENTS, POLICY_KEYS]);
    const seconds = (performance.now() - started) / 1000;
    log(`  ${to} of ${count} approvals written (${round(to / seconds, 0)}/s)`);
  }
}
