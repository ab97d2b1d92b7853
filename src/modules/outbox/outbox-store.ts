import { qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import { AUDIT_EVENT_COLUMNS } from '../audit/audit-columns.js';
import type { Actor, DomainEventType } from '../audit/audit-events.js';
import type { DomainEvent } from './domain-events.js';
import { OUTBOX_MESSAGE_COLUMNS } from './outbox-columns.js';

/** A leased outbox row (`id`, to mark it relayed) and the domain event it publishes. */
export interface ClaimedEvent {
  id: string;
  event: DomainEvent;
}

interface DomainEventRow {
  /** The outbox row's own id. */
  outboxId: string;
  id: string;
  type: DomainEventType;
  orgId: string;
  seq: string | null;
  actor: string | null;
  createdAt: Date;
  data: string | null;
  body: { data?: Record<string, unknown> } | null;
}

const outbox = qualified('o', OUTBOX_MESSAGE_COLUMNS);
const audit = qualified('a', AUDIT_EVENT_COLUMNS);
const DOMAIN_EVENT_COLUMNS = selectList({
  outboxId: outbox.id,
  id: outbox.eventId,
  type: outbox.eventType,
  orgId: outbox.orgId,
  seq: outbox.auditSeq,
  actor: audit.actor,
  createdAt: `COALESCE(${audit.createdAt}, ${outbox.createdAt})`,
  data: audit.data,
  body: outbox.body,
} satisfies ColumnMap<DomainEventRow>);

/**
 * The outbox rows of a relation named `o` (a WITH clause of the statement) with the audit events
 * they point at, or their own body for an event outside the chain, in outbox order.
 */
const SELECT_DOMAIN_EVENTS_OF_O = `
  SELECT ${DOMAIN_EVENT_COLUMNS}
  FROM o LEFT JOIN audit_events a ON a.org_id = o.org_id AND a.seq = o.audit_seq
  ORDER BY o.id`;

function domainEvent(row: DomainEventRow): DomainEvent {
  return {
    id: row.id,
    type: row.type,
    orgId: row.orgId,
    seq: row.seq === null ? null : Number(row.seq),
    actor: row.actor === null ? null : (JSON.parse(row.actor) as Actor),
    createdAt: row.createdAt,
    data: row.data === null ? (row.body?.data ?? {}) : (JSON.parse(row.data) as Record<string, unknown>),
  };
}

/** Domain events on their way from the outbox to their consumers. */
export class OutboxStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Leases up to `limit` unrelayed rows, oldest first, and reads their events with them (one
   * round trip: at low load a pass relays a single event). SKIP LOCKED and the lease let any number
   * of relays run side by side; a relay that dies leaves its lease to expire, not a lost row.
   */
  async claim(limit: number, leaseMs: number): Promise<ClaimedEvent[]> {
    const rows = await this.sql.query<DomainEventRow>(
      'outbox-claim',
      `WITH o AS (
         UPDATE outbox_messages SET claimed_until = clock_timestamp() + $2 * interval '1 millisecond'
         WHERE id IN (
           SELECT id FROM outbox_messages
           WHERE relayed_at IS NULL AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
           ORDER BY id
           LIMIT $1
           FOR UPDATE SKIP LOCKED)
         RETURNING *)
       ${SELECT_DOMAIN_EVENTS_OF_O}`,
      [limit, leaseMs],
    );
    return rows.map((row) => ({ id: row.outboxId, event: domainEvent(row) }));
  }

  /** The domain events of these ids, in outbox order; unknown ids are left out. */
  async load(eventIds: readonly string[]): Promise<DomainEvent[]> {
    const rows = await this.sql.query<DomainEventRow>(
      'domain-events',
      `WITH o AS (SELECT * FROM outbox_messages WHERE event_id = ANY ($1::uuid[])) ${SELECT_DOMAIN_EVENTS_OF_O}`,
      [eventIds],
    );
    return rows.map(domainEvent);
  }

  /**
   * How long the oldest domain event not yet relayed has waited, in seconds; 0 when none waits.
   * The oldest is the first in id order, one entry of the relay's own index: min(created_at) read
   * every row waiting, at every scrape, and most of all when the relay has stopped and they pile up.
   */
  async lagSeconds(): Promise<number> {
    const [row] = await this.sql.query<{ lag: number | null }>(
      'outbox-lag',
      `SELECT extract(epoch FROM clock_timestamp() - created_at)::float8 AS lag FROM outbox_messages
       WHERE relayed_at IS NULL ORDER BY id LIMIT 1`,
      [],
    );
    return row?.lag ?? 0;
  }

  /** Gives claimed rows back at once, when handing them to the consumers failed. */
  async release(ids: readonly string[]): Promise<void> {
    await this.sql.query('outbox-release', 'UPDATE outbox_messages SET claimed_until = NULL WHERE id = ANY ($1::bigint[])', [ids]);
  }

  async markRelayed(ids: readonly string[]): Promise<void> {
    await this.sql.query(
      'outbox-mark-relayed',
      'UPDATE outbox_messages SET relayed_at = clock_timestamp(), claimed_until = NULL WHERE id = ANY ($1::bigint[])',
      [ids],
    );
  }
}
