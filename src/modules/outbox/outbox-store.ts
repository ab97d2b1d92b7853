import type { Database } from '../../data/database.js';

export interface ClaimedMessage {
  id: bigint;
  orgId: string;
  eventId: string;
  eventType: string;
  approvalId: string;
}

export interface PendingDelivery {
  id: string;
  attemptCount: number;
}

/** Outbox rows on their way to the queues. */
export class OutboxStore {
  constructor(private readonly db: Database) {}

  /**
   * Leases up to `limit` unrelayed rows, oldest first. SKIP LOCKED and the lease let any number
   * of relays run side by side; a relay that dies leaves its lease to expire, not a lost row.
   */
  claim(limit: number, leaseMs: number): Promise<ClaimedMessage[]> {
    return this.db.$queryRaw<ClaimedMessage[]>`
      UPDATE outbox_messages SET claimed_until = clock_timestamp() + ${leaseMs} * interval '1 millisecond'
      WHERE id IN (
        SELECT id FROM outbox_messages
        WHERE relayed_at IS NULL AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
        ORDER BY id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, org_id AS "orgId", event_id AS "eventId", event_type AS "eventType",
                body->'data'->>'approvalId' AS "approvalId"`;
  }

  /**
   * Creates one delivery per (event, subscribed enabled endpoint) and returns every delivery of
   * these events still waiting for its first attempt, including those a failed relay made before.
   */
  fanOut(eventIds: string[]): Promise<PendingDelivery[]> {
    return this.db.$queryRaw<PendingDelivery[]>`
      WITH created AS (
        INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, next_attempt_at)
        SELECT gen_random_uuid(), o.org_id, e.id, o.event_id, o.event_type, clock_timestamp()
        FROM outbox_messages o
        JOIN webhook_endpoints e ON e.org_id = o.org_id AND e.enabled AND o.event_type = ANY (e.events)
        WHERE o.event_id = ANY (${eventIds}::uuid[])
        ON CONFLICT (event_id, endpoint_id) DO NOTHING
        RETURNING id, attempt_count
      )
      SELECT id, attempt_count AS "attemptCount" FROM created
      UNION ALL
      SELECT id, attempt_count FROM webhook_deliveries
      WHERE event_id = ANY (${eventIds}::uuid[]) AND status = 'pending' AND attempt_count = 0`;
  }

  /** Gives claimed rows back at once, when handing them to the queues failed. */
  async release(ids: bigint[]): Promise<void> {
    await this.db.$executeRaw`UPDATE outbox_messages SET claimed_until = NULL WHERE id = ANY (${ids}::bigint[])`;
  }

  async markRelayed(ids: bigint[]): Promise<void> {
    await this.db.$executeRaw`
      UPDATE outbox_messages SET relayed_at = clock_timestamp(), claimed_until = NULL WHERE id = ANY (${ids}::bigint[])`;
  }
}
