import type { Database, Sql } from '../../data/database.js';
import type { Actor } from '../audit/audit-events.js';
import { auditEventsArgument } from '../audit/audit-store.js';

/** Everything one attempt needs, read fresh for every attempt (jobs carry ids only). */
export interface AttemptTarget {
  deliveryId: string;
  orgId: string;
  status: 'pending' | 'succeeded' | 'failed';
  attemptCount: number;
  eventId: string;
  /** The webhook body as committed with the state change: the bytes every attempt sends. */
  rawBody: string;
  endpoint: {
    id: string;
    url: string;
    enabled: boolean;
    failingSince: Date | null;
    /** Newest first: the current secret, then the previous one while its grace period lasts. */
    secrets: string[];
  };
}

export interface AttemptRecord {
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
}

export interface PendingDelivery {
  id: string;
  attemptCount: number;
}

/** How an attempt leaves the delivery and its endpoint. */
export type AttemptResolution =
  { kind: 'succeeded' } | { kind: 'retry'; nextAttemptAt: Date } | { kind: 'failed' } | { kind: 'endpoint-disabled'; reason: string };

/** Webhook deliveries and their attempt log: the retry state lives here, not only in Redis. */
interface TargetRow {
  orgId: string;
  status: AttemptTarget['status'];
  attemptCount: number;
  eventId: string;
  rawBody: string;
  endpointId: string;
  url: string;
  enabled: boolean;
  failingSince: Date | null;
  secret: string;
  previousSecret: string | null;
}

export class DeliveryStore {
  constructor(
    private readonly db: Database,
    private readonly sql: Sql,
  ) {}

  /** See DeliveryService.fanOut. */
  fanOut(eventIds: readonly string[]): Promise<PendingDelivery[]> {
    return this.sql.query<PendingDelivery>(
      'delivery-fan-out',
      `WITH created AS (
         INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, next_attempt_at)
         SELECT gen_random_uuid(), o.org_id, e.id, o.event_id, o.event_type, clock_timestamp()
         FROM outbox_messages o
         JOIN webhook_endpoints e ON e.org_id = o.org_id AND e.enabled AND o.event_type = ANY (e.events)
         WHERE o.event_id = ANY ($1::uuid[])
         ON CONFLICT (event_id, endpoint_id) DO NOTHING
         RETURNING id, attempt_count)
       SELECT id, attempt_count AS "attemptCount" FROM created
       UNION ALL
       SELECT id, attempt_count FROM webhook_deliveries
       WHERE event_id = ANY ($1::uuid[]) AND status = 'pending' AND attempt_count = 0`,
      [eventIds],
    );
  }

  /** One prepared statement: this runs before every attempt. */
  async loadTarget(deliveryId: string): Promise<AttemptTarget | null> {
    const [row] = await this.sql.query<TargetRow>(
      'delivery-target',
      `SELECT d.org_id AS "orgId", d.status, d.attempt_count AS "attemptCount", d.event_id AS "eventId", o.body::text AS "rawBody",
              e.id AS "endpointId", e.url, e.enabled, e.failing_since AS "failingSince", e.secret,
              CASE WHEN e.previous_secret_expires_at > clock_timestamp() THEN e.previous_secret END AS "previousSecret"
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       JOIN outbox_messages o ON o.event_id = d.event_id
       WHERE d.id = $1`,
      [deliveryId],
    );
    if (!row) return null;
    return {
      deliveryId,
      orgId: row.orgId,
      status: row.status,
      attemptCount: row.attemptCount,
      eventId: row.eventId,
      rawBody: row.rawBody,
      endpoint: {
        id: row.endpointId,
        url: row.url,
        enabled: row.enabled,
        failingSince: row.failingSince,
        secrets: row.previousSecret ? [row.secret, row.previousSecret] : [row.secret],
      },
    };
  }

  /**
   * Records an attempt and its consequences (see ag_record_delivery_attempt). Returns false,
   * recording nothing, when another worker already recorded this attempt (a job run twice after
   * its lock lapsed), so the attempt log and the counters never double-count.
   */
  async recordAttempt(target: AttemptTarget, record: AttemptRecord, resolution: AttemptResolution, actor: Actor): Promise<boolean> {
    const disabled = resolution.kind === 'endpoint-disabled' ? resolution.reason : null;
    const events = disabled
      ? [
          {
            type: 'webhook.updated' as const,
            actor,
            createdAt: record.attemptedAt,
            data: { endpointId: target.endpoint.id, url: target.endpoint.url, enabled: false, reason: disabled },
          },
        ]
      : [];
    const [row] = await this.sql.query<{ recorded: boolean }>(
      'record-delivery-attempt',
      `SELECT ag_record_delivery_attempt($1::uuid, $2::integer, $3::timestamptz, $4::integer, $5::integer, $6::text, $7::text,
                                         $8::text, $9::timestamptz, $10::text, $11::jsonb) AS recorded`,
      [
        target.deliveryId,
        record.attempt,
        record.attemptedAt,
        record.durationMs,
        record.statusCode,
        record.error,
        record.responseBody,
        resolution.kind,
        resolution.kind === 'retry' ? resolution.nextAttemptAt : null,
        disabled,
        auditEventsArgument(events),
      ],
    );
    return row?.recorded === true;
  }

  /** Closes a delivery without an attempt: its endpoint was disabled meanwhile. */
  async abandon(deliveryId: string, at: Date): Promise<void> {
    await this.db.webhookDelivery.updateMany({
      where: { id: deliveryId, status: 'pending' },
      data: { status: 'failed', nextAttemptAt: null, completedAt: at },
    });
  }

  /** Pending deliveries whose next attempt is overdue by `graceMs`: their job was lost. */
  findStalled(graceMs: number, limit: number): Promise<{ id: string; attemptCount: number }[]> {
    return this.db.webhookDelivery.findMany({
      where: { status: 'pending', nextAttemptAt: { lte: new Date(Date.now() - graceMs) } },
      select: { id: true, attemptCount: true },
      orderBy: { nextAttemptAt: 'asc' },
      take: limit,
    });
  }
}
