import type { Sql } from '../../data/database.js';

const BATCH = 10_000;

/**
 * Appends `count` synthetic `approval.*` events to an organization's chain, for load tests and
 * benchmarks: built in SQL and appended through `ag_append_audit_events`, the function every
 * real write goes through, so hashes, seq and the chain head are exactly as in production.
 * `data` is written in RFC 8785 form by hand (keys sorted, compact), shaped like a real
 * `approval.created` event; event i is at `start` + i ms, its action `payments.refund.<i % 50>`
 * and its agent `agent-<i % 7>`, and types rotate created, approved, rejected.
 */
export async function appendSyntheticAuditEvents(
  sql: Sql,
  orgId: string,
  count: number,
  start = new Date('2026-01-01T00:00:00Z'),
): Promise<void> {
  for (let offset = 0; offset < count; offset += BATCH) {
    await sql.query(
      'synthetic-audit-events',
      `SELECT ag_append_audit_events($1::uuid, (
         SELECT jsonb_agg(jsonb_build_object(
           'id', gen_random_uuid(),
           'type', (ARRAY['approval.created', 'approval.approved', 'approval.rejected'])[1 + i % 3],
           'actor', '{"type":"api_key","id":"00000000-0000-4000-8000-000000000000"}',
           'action', 'payments.refund.' || i % 50,
           'agent', 'agent-' || i % 7,
           'createdAt', $4::timestamptz + i * interval '1 millisecond',
           'data', '{"action":"payments.refund.' || i % 50 || '","agent":"agent-' || i % 7
             || '","approvalId":"' || md5(i::text)::uuid || '","context":{"ip":"10.0.0.' || i % 255 || '","ticket":"T-' || i
             || '"},"expiresAt":"2026-02-01T00:00:00.000Z","matchedRule":null,"outcome":"review","payload":{"amount":' || i % 10000
             || ',"currency":"EUR","note":"refund for order ' || i || '"},"policyKey":"payments"}'
         ) ORDER BY i)
         FROM generate_series($2::int, $3::int) AS i))`,
      [orgId, offset + 1, Math.min(count, offset + BATCH), start.toISOString()],
    );
  }
}
